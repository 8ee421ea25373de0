/**
 * The publishable @toolplane/client as a consumer gets it: built by `npm run build:client`'s script,
 * packed by npm, installed from the tarball by npm offline into a directory outside the repository
 * (an empty npm cache; its dependencies copied from this repository's node_modules, which is what
 * offline means here), then a plain ESM script calls the stack with it and tsc checks a TypeScript
 * consumer against the installed declarations.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { natsUrl, ROOT } from '../support/env';
import { RawClient } from '../support/nats-client';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? tmpdir(), ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const ok = (r: Run, what: string): Run => {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
};

/** The installed directory of `name` as Node would resolve it from `from` (inside this repository). */
function installed(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT || dir === dirname(dir)) throw new Error(`${name} is not installed`);
  }
}

/** Copies the runtime dependencies of a package.json, transitively, into `target`/node_modules (flat: one version each here). */
function copyDependencies(deps: Record<string, string>, target: string): string[] {
  const queue = Object.keys(deps).map((name) => ({ name, from: ROOT }));
  const copied = new Map<string, string>();
  while (queue.length) {
    const { name, from } = queue.shift()!;
    if (copied.has(name)) continue;
    const dir = installed(name, from);
    copied.set(name, dir);
    cpSync(dir, join(target, 'node_modules', name), { recursive: true, dereference: true });
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const d of Object.keys(pkg.dependencies ?? {})) queue.push({ name: d, from: dir });
  }
  return [...copied.keys()].sort();
}

const SCRIPT = `import { ToolplaneClient, ToolplaneError } from '@toolplane/client';
const env = process.env;
const client = await ToolplaneClient.connect({ nats: { servers: env.TP_NATS }, prefix: env.TP_PREFIX, org: env.TP_ORG, token: env.TP_TOKEN });
try {
  const { tool } = await client.tools.get({ name: env.TP_TOOL });
  const missing = await client.tools.get({ name: 'no_such_tool' }).catch((e) => e);
  console.log(JSON.stringify({ id: tool.id, name: tool.name, missing: { typed: missing instanceof ToolplaneError, code: missing.code } }));
} finally {
  await client.close();
}
`;

const CONSUMER = `import { isEvent, McpServerProgressed, ToolplaneClient, ToolplaneError, type Tool, type ToolExecutionResult } from '@toolplane/client';

export async function step(client: ToolplaneClient): Promise<Tool> {
  const { tool } = await client.tools.get({ org_id: 'acme', name: 'add' });
  const r = await client.tools.execute({ org_id: 'acme', tool_name: 'add', args: { a: 1 } });
  if ('func_return' in r) {
    const result: ToolExecutionResult = r;
    void result;
  }
  // @ts-expect-error: tools.get has no field \`nme\` (the request type is the contract's, not any)
  await client.tools.get({ org_id: 'acme', nme: 'add' });
  for await (const e of client.events({ entities: ['mcp-server'] })) {
    if (isEvent(e, McpServerProgressed)) {
      const pages: number = e.payload.pages;
      void pages;
    }
  }
  try {
    await client.tools.list({ org_id: 'acme' });
  } catch (e) {
    if (e instanceof ToolplaneError) {
      const code: string = e.code;
      void code;
    }
  }
  return tool;
}
`;

describe('@toolplane/client as a published package', () => {
  const org = uniqueOrg('client-pkg');
  const work = mkdtempSync(join(tmpdir(), 'tp-client-pkg-'));
  let raw: RawClient;

  beforeAll(async () => {
    raw = await RawClient.connect(testPrefix());
  });
  afterAll(async () => {
    await raw?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('builds, packs, installs offline, runs as ESM against the stack and type-checks a consumer', async () => {
    ok(await run(process.execPath, [join(ROOT, 'libs', 'client', 'build.mjs')], { cwd: ROOT }), 'build');
    const pkgDir = join(ROOT, 'dist', 'packages', 'client');
    const npmEnv = { npm_config_cache: join(work, 'npm-cache'), npm_config_update_notifier: 'false' };

    const packed = JSON.parse(
      ok(
        await run('npm', ['pack', pkgDir, '--pack-destination', work, '--json', '--ignore-scripts'], {
          cwd: work,
          env: npmEnv,
        }),
        'npm pack',
      ).stdout,
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    expect(packed[0]!.files.map((f) => f.path).sort()).toEqual([
      'README.md',
      'dist/index.d.mts',
      'dist/index.mjs',
      'package.json',
    ]);
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    // No Nest, and nothing of the monorepo's own libraries: contracts are bundled in.
    expect(
      Object.keys(manifest.dependencies).filter((d) => d.startsWith('@nestjs/') || d.startsWith('@toolplane/')),
    ).toEqual([]);

    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    expect(copyDependencies(manifest.dependencies, app)).toEqual(
      expect.arrayContaining(Object.keys(manifest.dependencies)),
    );
    ok(
      await run(
        'npm',
        [
          'install',
          '--offline',
          '--no-audit',
          '--no-fund',
          '--no-package-lock',
          '--ignore-scripts',
          join(work, packed[0]!.filename),
        ],
        { cwd: app, env: npmEnv },
      ),
      'npm install',
    );
    expect(
      JSON.parse(readFileSync(join(app, 'node_modules', '@toolplane', 'client', 'package.json'), 'utf8')),
    ).toMatchObject({ name: '@toolplane/client' });

    // A plain ESM script, outside the repository, calls the stack.
    const { tool } = await raw.req<{ tool: { id: string } }>('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code:
          'def pkg_add(a: int) -> int:\n    """Add one.\n\n    Args:\n        a (int): A number.\n    """\n    return a + 1\n',
      },
    });
    writeFileSync(join(app, 'call.mjs'), SCRIPT);
    const env = {
      TP_NATS: natsUrl(),
      TP_PREFIX: testPrefix(),
      TP_ORG: org,
      TP_TOKEN: await raw.tokenFor(org),
      TP_TOOL: 'pkg_add',
    };
    const called = ok(await run(process.execPath, ['call.mjs'], { cwd: app, env }), 'the ESM script');
    expect(JSON.parse(called.stdout)).toEqual({
      id: tool.id,
      name: 'pkg_add',
      missing: { typed: true, code: 'TOOL_NOT_FOUND' },
    });

    // A TypeScript consumer type-checks against the installed declarations (strict, nodenext).
    writeFileSync(join(app, 'consumer.ts'), CONSUMER);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          lib: ['ESNext', 'DOM'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = await run(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
      { cwd: app },
    );
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.code).toBe(0);
    // The consumer resolved the package's own declarations, not the repository's sources.
    const listed = ok(
      await run(
        process.execPath,
        [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--listFilesOnly'],
        { cwd: app },
      ),
      'tsc --listFilesOnly',
    ).stdout;
    const ours = listed.split('\n').filter((f) => f.includes('@toolplane'));
    expect(ours.map((f) => relative(app, f.trim()))).toEqual([
      join('node_modules', '@toolplane', 'client', 'dist', 'index.d.mts'),
    ]);
  }, 240_000);
});
