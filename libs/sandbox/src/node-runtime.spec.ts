import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BwrapDriver } from './bwrap.driver';
import { npmSpecifiers, failedNpmPackage } from './npm.builder';
import { prepareScript } from './typescript';
import type { SandboxRunSpec } from './sandbox.types';

const limits = { stdoutBytes: 65536, stderrBytes: 65536, maxOutputBytes: 1 << 20 };
const spec = (
  sourceCode: string,
  functionName: string,
  args: Record<string, unknown> = {},
  extra: Partial<SandboxRunSpec> = {},
): SandboxRunSpec => ({
  runId: 'r',
  sourceCode,
  functionName,
  args,
  env: {},
  timeoutMs: 10_000,
  limits,
  sourceType: 'typescript',
  ...extra,
});

describe('prepareScript / npmSpecifiers', () => {
  it('strips types (enums included) and reads the parameter order', () => {
    const p = prepareScript(
      'enum C { A = 2 }\nexport function f(b: number, a: string, { x }: { x: number }): number { return C.A + b; }',
      'f',
    );
    expect(p.params).toEqual(['b', 'a', null]);
    expect(p.code).not.toContain(': number');
    expect(prepareScript('export default async (q: string) => q', 'anything').params).toEqual(['q']);
  });
  it('accepts names and ranges, refuses paths, URLs and git specs', () => {
    expect(npmSpecifiers([{ name: 'b' }, { name: '@s/a', version: '^1.2.0' }])).toEqual(['@s/a@^1.2.0', 'b']);
    for (const bad of ['../x', 'file:/x', 'git+https://x', 'a b'])
      expect(() => npmSpecifiers([{ name: bad }])).toThrow();
    expect(() => npmSpecifiers([{ name: 'a', version: 'file:../x' }])).toThrow();
    expect(
      failedNpmPackage('npm error 404 Not Found - GET https://registry.npmjs.org/nope-pkg - Not found', ['a']),
    ).toBe('nope-pkg');
  });
});

describe('BwrapDriver: TypeScript tools on Node', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tp-node-'));
  const tarballs = path.join(root, 'tarballs');
  let driver: BwrapDriver;

  beforeAll(async () => {
    const pkg = path.join(root, 'pkg');
    mkdirSync(pkg);
    mkdirSync(tarballs);
    writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: 'tp-shout', version: '1.2.3', main: 'index.js' }),
    );
    writeFileSync(path.join(pkg, 'index.js'), 'exports.shout = (s) => String(s).toUpperCase() + "!";\n');
    execFileSync('npm', ['pack', '--pack-destination', tarballs], { cwd: pkg, stdio: 'ignore' });
    execFileSync('chmod', ['-R', 'a+rX', root]);
    driver = new BwrapDriver({
      workRoot: path.join(root, 'work'),
      pool: { warm: 0 },
      npm: { localDirs: [tarballs], offline: true },
    });
    await driver.init();
  }, 60_000);
  afterAll(() => driver.close());

  it('runs Node from a directory the sandbox user cannot read (a checkout under a 0700 temp dir)', async () => {
    const hidden = mkdtempSync(path.join(os.tmpdir(), 'tp-hidden-node-')); // 0700
    mkdirSync(path.join(hidden, 'bin'));
    copyFileSync(process.execPath, path.join(hidden, 'bin', 'node'));
    chmodSync(path.join(hidden, 'bin', 'node'), 0o755);
    const d = new BwrapDriver({
      workRoot: path.join(root, 'work-hidden'),
      pool: { warm: 0 },
      nodePath: path.join(hidden, 'bin', 'node'),
    });
    try {
      await d.init();
      const o = await d.run(
        spec('export function hi(name: string): string { return `hi ${name}`; }', 'hi', { name: 'there' }),
      );
      expect(o).toMatchObject({ status: 'success', value: 'hi there' });
    } finally {
      await d.close();
      rmSync(hidden, { recursive: true, force: true });
    }
  }, 60_000);

  it('calls the function with args by parameter name, in order; async; console.log to stdout', async () => {
    const o = await driver.run(
      spec(
        'export async function sub(a: number, b: number): Promise<number> { console.log("hi", a); await new Promise((r) => setTimeout(r, 5)); return a - b; }',
        'sub',
        { b: 2, a: 10 },
      ),
    );
    expect(o).toMatchObject({ status: 'success', value: 8, stdout: 'hi 10\n' });
  });

  it('exceptions: name, message, stack on stderr; non-JSON → String()', async () => {
    const o = await driver.run(
      spec(
        'class Boom extends Error { name = "Boom" }\nexport function f(): never { throw new Boom("bad " + process.getuid()); }',
        'f',
      ),
    );
    expect(o.status).toBe('error');
    expect(o.error).toMatchObject({ kind: 'exception', type: 'Boom' });
    expect(o.error!.message).toMatch(/^bad \d+$/);
    expect(o.error!.message).not.toBe('bad 0');
    expect(o.stderr).toContain('at f (/tool/f.js');
    const v = await driver.run(
      spec('export function f() { return { n: 10n, s: new Set([1]), d: new Date(0), inf: Infinity }; }', 'f'),
    );
    expect(v.value).toEqual({ n: '10', s: '[object Set]', d: '1970-01-01T00:00:00.000Z', inf: 'Infinity' });
  });

  it('is confined: no capabilities, no /etc/shadow, no network, only the declared env', async () => {
    const src = `import * as fs from 'node:fs';
import * as net from 'node:net';
export async function probe(): Promise<Record<string, unknown>> {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  let shadow = 'read';
  try { fs.readFileSync('/etc/shadow'); } catch (e) { shadow = (e as NodeJS.ErrnoException).code ?? 'err'; }
  const conn = await new Promise((resolve) => {
    const s = net.connect(4222, '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve('connected'); });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code));
  });
  return { capEff: /CapEff:\\s*(\\w+)/.exec(status)?.[1], noNewPrivs: /NoNewPrivs:\\s*(\\d)/.exec(status)?.[1], seccomp: /Seccomp:\\s*(\\d)/.exec(status)?.[1], shadow, conn, env: Object.keys(process.env).sort(), cwd: process.cwd() };
}`;
    const o = await driver.run(spec(src, 'probe', {}, { env: { MY_VAR: 'x' } }));
    expect(o.status).toBe('success');
    expect(o.value).toMatchObject({
      capEff: '0000000000000000',
      noNewPrivs: '1',
      seccomp: '2',
      conn: 'ECONNREFUSED',
      cwd: '/tmp',
    });
    expect(['ENOENT', 'EACCES']).toContain((o.value as { shadow: string }).shadow);
    expect((o.value as { env: string[] }).env).toEqual([
      'HOME',
      'LANG',
      'MY_VAR',
      'PATH',
      'PYTHONDONTWRITEBYTECODE',
      'PYTHONIOENCODING',
      'TMPDIR',
    ]);
  });

  it('times out an infinite loop and keeps serving', async () => {
    const o = await driver.run(spec('export function spin() { for (;;) {} }', 'spin', {}, { timeoutMs: 800 }));
    expect(o.error).toMatchObject({ kind: 'timeout', type: 'TimeoutError' });
    expect((await driver.run(spec('export const ok = () => "ok"', 'ok'))).value).toBe('ok');
  });

  it('output over the cap stops the call; a memory bomb hits the heap cap; the driver keeps serving', async () => {
    const flood = await driver.run(
      spec(
        'export function flood() { const s = "x".repeat(65536); for (;;) process.stdout.write(s); }',
        'flood',
        {},
        { limits: { stdoutBytes: 1024, stderrBytes: 1024, maxOutputBytes: 256 * 1024 } },
      ),
    );
    expect(flood.error).toMatchObject({ kind: 'output_limit', type: 'OutputLimitExceeded' });
    expect(flood.stdout.length).toBe(1024);
    const bomb = await driver.run(
      spec(
        'export function bomb() { const a: string[] = []; for (;;) a.push("y".repeat(1 << 20) + a.length); }',
        'bomb',
        {},
        { isolation: { memoryBytes: 128 * 1024 * 1024 } },
      ),
    );
    expect(bomb.status).toBe('error');
    expect(bomb.error!.kind).toBe('crashed');
    expect(bomb.stderr).toMatch(/heap|memory/i);
    expect((await driver.run(spec('export const ok = (a: number) => a * 2', 'ok', { a: 21 }))).value).toBe(42);
  }, 30_000);

  it('npm requirements from a local tarball: built once, then reused; a missing package names it', async () => {
    const src = "import { shout } from 'tp-shout';\nexport function f(s: string) { return shout(s); }";
    const [a, b] = await Promise.all([
      driver.run(spec(src, 'f', { s: 'hey' }, { npmRequirements: ['tp-shout@1.2.3'] })),
      driver.run(spec(src, 'f', { s: 'yo' }, { npmRequirements: ['tp-shout'] })),
    ]);
    expect(a).toMatchObject({ status: 'success', value: 'HEY!' });
    expect(b).toMatchObject({ status: 'success', value: 'YO!' });
    const builds = driver.stats().npmBuilds;
    await driver.run(spec(src, 'f', { s: 'x' }, { npmRequirements: ['tp-shout@1.2.3'] }));
    expect(driver.stats().npmBuilds).toBe(builds);
    const bad = await driver.run(spec(src, 'f', { s: 'x' }, { npmRequirements: ['no-such-pkg-tp@9.9.9'] }));
    expect(bad.error).toMatchObject({ kind: 'dependency_failed', type: 'DependencyInstallFailed' });
    expect(bad.error!.message).toContain('could not install no-such-pkg-tp');
  }, 120_000);
});
