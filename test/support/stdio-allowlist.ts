import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { ROOT } from './env';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const SERVERS = [
  '@modelcontextprotocol/server-everything',
  '@modelcontextprotocol/server-memory',
  '@modelcontextprotocol/sdk',
];

export interface StdioFixture {
  node: string;
  everything: string;
  memory: string;
  spy: string;
  modules: string;
  spyDir: string;
}

/** Can an unprivileged user (the stdio sandbox's uid) reach and read `path`? */
function readableByOthers(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    const mode = statSync(p).mode;
    if (p !== path && !(mode & 0o001)) return false;
    if (p === path && !(mode & 0o004)) return false;
    if (p === dirname(p)) return true;
  }
}

/** The packages `names` need at run time (their dependencies, transitively), as directories under node_modules. */
function closure(names: string[]): string[] {
  const modules = join(ROOT, 'node_modules');
  const seen = new Set<string>();
  const queue = names.map((n) => join(modules, n));
  while (queue.length) {
    const dir = queue.pop()!;
    if (seen.has(dir) || !existsSync(join(dir, 'package.json'))) continue;
    seen.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })) {
      // Node's lookup: the package's own node_modules, then each parent's, up to the root's.
      for (let at = dir; at.startsWith(modules); at = dirname(at)) {
        const candidate = join(at, 'node_modules', dep);
        if (existsSync(candidate)) {
          queue.push(candidate);
          break;
        }
      }
      if (existsSync(join(modules, dep))) queue.push(join(modules, dep));
    }
  }
  // Top-level package directories only: a nested node_modules comes with its package.
  return [...seen].filter((d) => !relative(modules, d).includes('node_modules'));
}

/**
 * The stdio MCP servers the tests run, where the stdio sandbox's unprivileged user can read them:
 * this checkout when it is readable by others, else (a checkout under a 0700 directory, as a CI
 * clone in `mktemp -d` is) a world-readable copy of Node, the servers and what they need, made
 * once per test run.
 */
export function stdioFixture(): StdioFixture {
  const modules = join(ROOT, 'node_modules');
  const spy = join(ROOT, 'dist', 'test', 'support', 'stdio-spy-server.js');
  const direct = { node: process.execPath, modules, spyDir: dirname(spy) };
  let where = direct;
  if (
    !(readableByOthers(process.execPath) && readableByOthers(modules) && (!existsSync(spy) || readableByOthers(spy)))
  ) {
    // Not under /tmp: the sandbox's working directory is its own /tmp, where a read path bound at
    // the same place would show up as an entry (the spy test asserts that /tmp is empty).
    const base = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
    const root = (process.env.TOOLPLANE_TEST_STDIO_ROOT ??= join(
      base,
      `tp-stdio-${process.pid}-${Date.now().toString(36)}`,
    ));
    if (!existsSync(join(root, '.complete'))) {
      mkdirSync(root, { recursive: true, mode: 0o755 });
      for (const dir of closure(SERVERS))
        cpSync(dir, join(root, 'node_modules', relative(modules, dir)), { recursive: true, dereference: true });
      cpSync(process.execPath, join(root, 'node'));
      if (existsSync(spy)) cpSync(dirname(spy), join(root, 'spy'), { recursive: true });
      chmodSync(root, 0o755);
      execFileSync('/bin/chmod', ['-R', 'a+rX', root]);
      writeFileSync(join(root, '.complete'), '');
    }
    where = { node: join(root, 'node'), modules: join(root, 'node_modules'), spyDir: join(root, 'spy') };
  }
  return {
    ...where,
    everything: join(where.modules, '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'),
    memory: join(where.modules, '@modelcontextprotocol', 'server-memory', 'dist', 'index.js'),
    spy: join(where.spyDir, 'stdio-spy-server.js'),
  };
}

/**
 * The stdio MCP servers the test stacks allow (MCP_STDIO_ALLOWED_COMMANDS), as an operator would
 * list them: the reference servers from npm and the test's spy, on this Node, reading only
 * node_modules (and the spy's own directory).
 */
export function testStdioAllowlist(): string {
  const f = stdioFixture();
  return JSON.stringify([
    { command: f.node, args: [escape(f.everything), 'stdio'], read_paths: [f.modules] },
    { command: f.node, args: [escape(f.memory)], read_paths: [f.modules], env: ['MEMORY_FILE_PATH'] },
    { command: f.node, args: [escape(f.spy), '/[^\\u0000]*'], read_paths: [f.modules, f.spyDir] },
  ]);
}
