import { expectEventually } from '@toolplane/testing';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, startStack, type Stack, startCallStack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

/**
 * pip requirements through the public API: a virtualenv per requirements hash, built once from a
 * local wheelhouse (no index), reused, and a typed error naming the package when pip fails.
 */
describe('sandbox pip requirements (local wheelhouse)', () => {
  const prefix = `pip${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('pip');
  const house = localWheelhouse([
    ['tpdemo', '1.0.0', 'from-wheel-1'],
    ['tpdemo', '2.0.0', 'from-wheel-2'],
  ]);
  let stack: Stack;
  let client: RawClient;
  const register = async (name: string, body: string, pip_requirements?: Array<{ name: string; version?: string }>) => {
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: pythonTool(name, body), ...(pip_requirements ? { pip_requirements } : {}) },
    });
    if (r.error) throw new Error(JSON.stringify(r.error));
  };
  const execute = (tool_name: string) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, tool_name, args: {} }, { timeoutMs: 60_000 });
  const venvs = () => readdirSync(join(house.workRoot, 'venvs')).filter((d) => /^py-[0-9a-f]+$/.test(d));
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'runner-local': house.runnerEnv },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    house.remove();
  });

  it('builds the virtualenv once for two concurrent first calls and reuses it', async () => {
    await register('uses_demo', 'import tpdemo\nreturn tpdemo.VALUE', [{ name: 'tpdemo', version: '1.0.0' }]);
    await register('uses_demo_too', 'import tpdemo, sys\nreturn [tpdemo.VALUE, sys.prefix]', [
      { name: 'TPDemo', version: '1.0.0' },
    ]);
    const [a, b] = await Promise.all([execute('uses_demo'), execute('uses_demo_too')]);
    expect(a).toMatchObject({ status: 'success', func_return: 'from-wheel-1' });
    expect(b.status).toBe('success');
    expect(b.func_return[0]).toBe('from-wheel-1');
    expect(b.func_return[1]).toBe('/opt/venv'); // the venv is bound read-only at /opt/venv
    expect(venvs()).toHaveLength(1);
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);

    // No pip on the hot path: the second call reuses the venv (no build counted).
    expect((await execute('uses_demo')).func_return).toBe('from-wheel-1');
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
  });

  it('keys environments by requirements: another version is another venv, no requirements sees none', async () => {
    await register('uses_demo_2', 'import tpdemo\nreturn tpdemo.VALUE', [{ name: 'tpdemo', version: '2.0.0' }]);
    expect((await execute('uses_demo_2')).func_return).toBe('from-wheel-2');
    expect(venvs()).toHaveLength(2);
    await register('no_demo', 'import tpdemo\nreturn tpdemo.VALUE');
    const r = await execute('no_demo');
    expect(r.status).toBe('error');
    expect(r.func_return).toBe("Error executing function no_demo: ModuleNotFoundError: No module named 'tpdemo'");
  });

  it('fails with DEPENDENCY_INSTALL_FAILED naming the package and quoting pip', async () => {
    await register('wants_missing', 'return 1', [{ name: 'not-in-wheelhouse', version: '9.9' }]);
    const r = await execute('wants_missing');
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('DEPENDENCY_INSTALL_FAILED');
    expect(r.error.message).toContain('could not install not-in-wheelhouse==9.9');
    expect(r.error.message).toMatch(/No matching distribution found for not-in-wheelhouse==9\.9/);
    expect(venvs()).toHaveLength(2); // the failed build left nothing behind
    expect((await execute('uses_demo')).func_return).toBe('from-wheel-1');
  });
});

/** RUNNER_POOL_WARM_ENVS: an environment built and kept warm at start-up, before any call needs it. */
describe('sandbox warm environments (RUNNER_POOL_WARM_ENVS)', () => {
  const prefix = `pipw${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('pipwarm');
  const house = localWheelhouse([['tpwarm', '1.0.0', 'warm-1']]);
  let stack: Stack;
  let client: RawClient;
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);

  beforeAll(async () => {
    const warmEnvs = [
      { pip_requirements: ['tpwarm==1.0.0'], warm: 2 },
      { pip_requirements: ['not-in-wheelhouse==1.0'], warm: 1 },
    ];
    stack = await startCallStack(prefix, {
      'runner-local': { ...house.runnerEnv, RUNNER_POOL_WARM_ENVS: JSON.stringify(warmEnvs) },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    house.remove();
  });

  it('builds the environment and keeps its slots warm before any call; a broken one is logged, the runner serves', async () => {
    // 1 default slot + 2 of the configured environment, without a single call.
    await expectEventually(async () => expect(await metric('toolplane_runner_pool_slots')).toBe(3), {
      timeoutMs: 45_000,
      intervalMs: 200,
    });
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
    await expectEventually(
      () =>
        expect(stack.apps.get('runner-local')!.output()).toMatch(
          /RUNNER_POOL_WARM_ENVS\) could not be built: not-in-wheelhouse==1\.0: .*not-in-wheelhouse/,
        ),
      { timeoutMs: 45_000, intervalMs: 200 },
    );

    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool('uses_warm', 'import tpwarm\nreturn tpwarm.VALUE'),
        pip_requirements: [{ name: 'tpwarm', version: '1.0.0' }],
      },
    });
    expect(r.error).toBeUndefined();
    const [hits, misses] = [
      await metric('toolplane_runner_pool_warm_hits_total'),
      await metric('toolplane_runner_pool_warm_misses_total'),
    ];
    const result = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'uses_warm', args: {} },
      { timeoutMs: 60_000 },
    );
    expect(result).toMatchObject({ status: 'success', func_return: 'warm-1' });
    expect(await metric('toolplane_runner_pool_warm_hits_total')).toBe(hits + 1);
    expect(await metric('toolplane_runner_pool_warm_misses_total')).toBe(misses);
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
  });
});
