import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';

/** Writes package.json + index.js for `name@version` and packs it with `npm pack` into `dest`. */
function packPackage(dest: string, name: string, version: string, indexJs: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'tp-npm-src-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version, main: 'index.js' }));
  writeFileSync(join(dir, 'index.js'), indexJs);
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: dir, stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

/**
 * TypeScript tools through the public API: upsert (schema from the signature) → execute on Node in
 * the bubblewrap sandbox; npm requirements installed once from a local tarball directory.
 */
describe('sandbox: TypeScript tools on Node', () => {
  const prefix = `node${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('node');
  const tarballs = mkdtempSync(join(tmpdir(), 'tp-tarballs-'));
  const workRoot = mkdtempSync(join(tmpdir(), 'tp-node-runs-'));
  let stack: Stack;
  let client: RawClient;
  const register = async (source_code: string, npm_requirements?: Array<{ name: string; version?: string }>) => {
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code, source_type: 'typescript', ...(npm_requirements ? { npm_requirements } : {}) },
    });
    if (r.error) throw new Error(JSON.stringify(r.error));
    return r.tool as { id: string; name: string };
  };
  const execute = (tool_name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, tool_name, args, ...extra }, { timeoutMs: 60_000 });

  beforeAll(async () => {
    mkdirSync(tarballs, { recursive: true });
    packPackage(tarballs, 'tp-greeter', '1.0.0', 'exports.greet = (n) => `hello ${n} from 1.0.0`;\n');
    chmodSync(tarballs, 0o755);
    chmodSync(workRoot, 0o755);
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        'runner-local': {
          RUNNER_NPM_LOCAL_DIRS: tarballs,
          RUNNER_NPM_OFFLINE: 'true',
          RUNNER_WORK_ROOT: workRoot,
          RUNNER_POOL_WARM: '1',
        },
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    rmSync(tarballs, { recursive: true, force: true });
    rmSync(workRoot, { recursive: true, force: true });
  });

  it('runs a TS tool: args by parameter name in order, types stripped, console.log → stdout', async () => {
    await register(`enum Unit { C = 'C', F = 'F' }
/**
 * Convert a temperature.
 * @param value degrees Celsius
 * @param unit target unit, C or F
 */
export function convertTemp(value: number, unit: string): { value: number; unit: Unit } {
  console.log('converting', value);
  return unit === 'F' ? { value: (value * 9) / 5 + 32, unit: Unit.F } : { value, unit: Unit.C };
}`);
    const r = await execute('convertTemp', { unit: 'F', value: 100 });
    expect(r).toMatchObject({
      status: 'success',
      func_return: { value: 212, unit: 'F' },
      stdout: ['converting 100\n'],
      provider: 'local',
    });
  });

  it('awaits async tools and serializes non-JSON values with String()', async () => {
    await register(`/**
 * Wait, then return odd values.
 * @param ms how long to wait
 */
export async function later(ms: number): Promise<unknown> {
  await new Promise((r) => setTimeout(r, ms));
  return { big: 12345678901234567890n, when: new Date(0), nan: NaN };
}`);
    const r = await execute('later', { ms: 20 });
    expect(r).toMatchObject({
      status: 'success',
      func_return: { big: '12345678901234567890', when: '1970-01-01T00:00:00.000Z', nan: 'NaN' },
    });
  });

  it('an exception is an error with name and message; the stack goes to stderr', async () => {
    await register(`/**
 * Always throws.
 * @param reason why
 */
export function explode(reason: string): never {
  throw new RangeError('no good: ' + reason);
}`);
    const r = await execute('explode', { reason: 'why' });
    expect(r).toMatchObject({
      status: 'error',
      func_return: 'Error executing function explode: RangeError: no good: why',
      error: { code: 'TOOL_EXCEPTION' },
    });
    expect(r.stderr.join('')).toContain('at explode (');
  });

  it('a tool that never returns times out and the runner keeps serving', async () => {
    await register('/** Never returns. */\nexport function forever(): void { for (;;) {} }');
    const r = await execute('forever', {}, { timeout_ms: 1000 });
    expect(r).toMatchObject({ status: 'error', error: { code: 'EXECUTION_TIMEOUT' } });
    expect(await execute('convertTemp', { unit: 'C', value: 1 })).toMatchObject({
      status: 'success',
      func_return: { value: 1, unit: 'C' },
    });
  });

  it('sees only the declared env, not the runner’s', async () => {
    await register(`/** Returns its environment. */
export function envOf(): Record<string, string | undefined> {
  return { ...process.env };
}`);
    const r = await execute('envOf', {}, { env: { GREETING: 'hi' } });
    expect(r.status).toBe('success');
    const env = r.func_return as Record<string, string>;
    expect(env.GREETING).toBe('hi');
    expect(env.TOOLPLANE_ORG_ID).toBe(org);
    expect(Object.keys(env).filter((k) => /NATS|DATABASE|RUNNER_|NODE_OPTIONS|JEST/.test(k))).toEqual([]);
  });

  it('is contained: no /etc/shadow, no network (NATS on 127.0.0.1 is unreachable), no capabilities', async () => {
    await register(`import * as fs from 'node:fs';
import * as net from 'node:net';
/** Tries to get out. */
export async function escape(): Promise<Record<string, unknown>> {
  let shadow: string;
  try { shadow = 'READ:' + fs.readFileSync('/etc/shadow', 'utf8').length; } catch (e) { shadow = (e as NodeJS.ErrnoException).code ?? 'error'; }
  const nats = await new Promise<string>((resolve) => {
    const s = net.connect(4222, '127.0.0.1');
    s.setTimeout(2000, () => { s.destroy(); resolve('timeout'); });
    s.on('connect', () => { s.destroy(); resolve('connected'); });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
  const capEff = /CapEff:\\s*(\\w+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  return { shadow, nats, capEff, uid: process.getuid?.() };
}`);
    const r = await execute('escape');
    expect(r.status).toBe('success');
    const v = r.func_return as { shadow: string; nats: string; capEff: string; uid: number };
    expect(['ENOENT', 'EACCES']).toContain(v.shadow);
    expect(v.nats).not.toBe('connected');
    expect(v.capEff).toBe('0000000000000000');
    expect(v.uid).not.toBe(0);
  });

  it('npm requirements: installed from a local tarball once, reused; a missing package is DEPENDENCY_INSTALL_FAILED naming it', async () => {
    const src = (name: string) => `import { greet } from 'tp-greeter';
/**
 * Greets someone.
 * @param who the name
 */
export function ${name}(who: string): string { return greet(who); }`;
    await register(src('greetA'), [{ name: 'tp-greeter', version: '1.0.0' }]);
    await register(src('greetB'), [{ name: 'tp-greeter', version: '1.0.0' }]);
    const [a, b] = await Promise.all([execute('greetA', { who: 'ada' }), execute('greetB', { who: 'bob' })]);
    expect(a).toMatchObject({ status: 'success', func_return: 'hello ada from 1.0.0' });
    expect(b).toMatchObject({ status: 'success', func_return: 'hello bob from 1.0.0' });
    const trees = readdirSync(join(workRoot, 'node_modules')).filter((d) => /^npm-[0-9a-f]+$/.test(d));
    expect(trees).toHaveLength(1);
    await register(src('greetMissing'), [{ name: 'tp-not-there', version: '2.0.0' }]);
    const bad = await execute('greetMissing', { who: 'x' });
    expect(bad).toMatchObject({ status: 'error', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
    expect(bad.error.message).toContain('tp-not-there');
  });
});
