import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { CALL_APPS, startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

/**
 * An org's sandbox config (toolplane.v1.sandbox-configs.upsert, provider local) shapes its calls:
 * the default timeout, the memory limit, the network, and pip requirements added to the tool's.
 */
describe('sandbox configs applied to execution', () => {
  const prefix = `sbc${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('sbc');
  const other = uniqueOrg('sbc-other');
  const house = localWheelhouse([
    ['tpcfg', '1.0.0', 'cfg-1'],
    ['tpcfg', '2.0.0', 'cfg-2'],
  ]);
  let stack: Stack;
  let client: RawClient;
  let opts: StackOptions;

  const req = async (subject: string, body: Record<string, unknown>) => {
    const r = await client.req(subject, body, { timeoutMs: 60_000 });
    // An execution's own failure is a result (status "error"), not an error reply.
    if (r.error && r.status === undefined) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r;
  };
  const configure = (config: Record<string, unknown>, o = org) =>
    req('toolplane.v1.sandbox-configs.upsert', { org_id: o, provider: 'local', config });
  const execute = (tool_name: string, extra: Record<string, unknown> = {}, o = org) =>
    req('toolplane.v1.tools.execute', { org_id: o, tool_name, args: {}, ...extra });
  const register = async (
    o: string,
    name: string,
    body: string,
    pip_requirements?: Array<{ name: string; version?: string }>,
  ) => {
    await req('toolplane.v1.tools.upsert', {
      org_id: o,
      tool: { source_code: pythonTool(name, body), ...(pip_requirements ? { pip_requirements } : {}) },
    });
  };

  beforeAll(async () => {
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'runner-local': { ...house.runnerEnv, RUNNER_ALLOW_NETWORK: 'true' } },
    };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    for (const o of [org, other]) {
      await register(o, 'nap', 'import time\ntime.sleep(1.5)\nreturn "rested"');
      await register(o, 'hog', 'block = bytearray(200 * 1024 * 1024)\nreturn len(block)');
      await register(o, 'nics', 'import socket\nreturn sorted(n for _, n in socket.if_nameindex())');
      await register(o, 'cfg_value', 'import tpcfg\nreturn tpcfg.VALUE');
      await register(o, 'cfg_pinned', 'import tpcfg\nreturn tpcfg.VALUE', [{ name: 'TPCfg', version: '2.0.0' }]);
    }
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    house.remove();
  });

  it('without a config: default limits, no network, no extra packages', async () => {
    expect(await execute('nap')).toMatchObject({
      status: 'success',
      func_return: 'rested',
      sandbox_config_fingerprint: null,
    });
    expect(await execute('hog')).toMatchObject({ status: 'success', func_return: 200 * 1024 * 1024 });
    expect((await execute('nics')).func_return).toEqual(['lo']);
    const missing = await execute('cfg_value');
    expect(missing).toMatchObject({ status: 'error', error: { code: 'TOOL_EXCEPTION' } });
    expect(JSON.stringify(missing.func_return)).toContain('ModuleNotFoundError');
  });

  it('timeout_ms is the default timeout of the org’s calls; a request’s own timeout_ms wins', async () => {
    const { sandbox_config } = await configure({ timeout_ms: 500 });
    const timedOut = await execute('nap');
    expect(timedOut).toMatchObject({
      status: 'error',
      error: { code: 'EXECUTION_TIMEOUT' },
      sandbox_config_fingerprint: sandbox_config.fingerprint,
    });
    expect(await execute('nap', { timeout_ms: 10_000 })).toMatchObject({ status: 'success', func_return: 'rested' });
    // Another org's config is not this one's.
    expect(await execute('nap', {}, other)).toMatchObject({ status: 'success', sandbox_config_fingerprint: null });
  });

  it('memory_mb caps the tool’s memory', async () => {
    await configure({ memory_mb: 64 });
    const r = await execute('hog');
    expect(r).toMatchObject({ status: 'error', error: { code: 'TOOL_EXCEPTION' } });
    expect(JSON.stringify(r.func_return)).toContain('MemoryError');
    expect(await execute('hog', {}, other)).toMatchObject({ status: 'success' });
  });

  it('network "egress" gives the call a network namespace of its own (slirp4netns on tap0); "none" keeps the empty one', async () => {
    await configure({ network: 'egress' });
    expect((await execute('nics')).func_return).toEqual(['lo', 'tap0']);
    await configure({ network: 'none' });
    expect((await execute('nics')).func_return).toEqual(['lo']);
  });

  it('pip_requirements are added to the tool’s; the tool’s own version of a package wins', async () => {
    await configure({ pip_requirements: [{ name: 'tpcfg', version: '1.0.0' }] });
    expect(await execute('cfg_value')).toMatchObject({ status: 'success', func_return: 'cfg-1' });
    expect(await execute('cfg_pinned')).toMatchObject({ status: 'success', func_return: 'cfg-2' });
    expect(await execute('cfg_value', {}, other)).toMatchObject({ status: 'error', error: { code: 'TOOL_EXCEPTION' } });
  });

  it('a runner with RUNNER_ALLOW_NETWORK=false runs an "egress" org without network and says so', async () => {
    await stack.stopApp('runner-local');
    const runner = await startApp('runner-local', {
      ...opts,
      appEnv: { 'runner-local': { ...opts.appEnv!['runner-local'], RUNNER_ALLOW_NETWORK: 'false' } },
    });
    stack.apps.set('runner-local', runner);
    await configure({ network: 'egress' });
    const r = await execute('nics');
    expect(r).toMatchObject({ status: 'success', func_return: ['lo'] });
    expect(r.stderr.join('')).toContain('RUNNER_ALLOW_NETWORK=false');
  });
});
