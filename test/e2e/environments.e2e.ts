import { expectEventually } from '@toolplane/testing';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packGatedNpm, writeGatedSdist } from '../support/build-fixtures';
import { uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, type Stack, startCallStack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

interface Environment {
  provider: string;
  status: 'none' | 'building' | 'ready' | 'failed';
  requirements_hash: string | null;
  progress?: string;
  error?: { code: string; message: string; package?: string };
  updated_at?: string;
}

/**
 * Environments are prepared, not built on the hot path (issue 14): upserting a tool starts the
 * build of its pip/npm requirements on the runner that will run it, toolplane.v1.tools.environment
 * tells its state, a call whose environment is still building is answered ENVIRONMENT_BUILDING
 * (retryable) while the build goes on, and one whose build failed DEPENDENCY_INSTALL_FAILED naming
 * the package — without building again. The runner here waits 1 ms for a build
 * (RUNNER_BUILD_WAIT_MS) and retries a failed one for calls only after an hour; slow builds are
 * sdists / npm install scripts that wait for a file the test writes.
 */
describe('environments: prepared on upsert, not built on the hot path', () => {
  const prefix = `envs${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('envs');
  const npmOrg = uniqueOrg('envs-npm');
  const other = uniqueOrg('envs-other');
  const house = localWheelhouse([['tpready', '1.0', 'ready-1']]);
  const tarballs = mkdtempSync(join(tmpdir(), 'tp-env-npm-'));
  const pipGate = join(house.dir, 'tpslow.go');
  const npmGate = join(tarballs, 'tp-slow-npm.go');
  let stack: Stack;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.req(subject, body, { timeoutMs: 60_000 });
  const upsert = async (o: string, tool: Record<string, unknown>) => {
    const r = await req('toolplane.v1.tools.upsert', { org_id: o, tool });
    if (r.error) throw new Error(JSON.stringify(r.error));
    return r.tool as { id: string; name: string };
  };
  const python = (o: string, name: string, body: string, pip: Array<{ name: string; version?: string }>) =>
    upsert(o, { source_code: pythonTool(name, body), ...(pip.length ? { pip_requirements: pip } : {}) });
  const typescript = (o: string, name: string, pkg: string) =>
    upsert(o, {
      source_type: 'typescript',
      source_code: `import { result } from '${pkg}';\n\n/** What the package says. */\nexport function ${name}(): unknown {\n  return result();\n}\n`,
      npm_requirements: [{ name: pkg, version: '1.0.0' }],
    });
  const execute = (o: string, name: string) =>
    req('toolplane.v1.tools.execute', { org_id: o, tool_name: name, args: {} });
  const environment = async (o: string, name: string, prepare = false): Promise<Environment> => {
    const r = await req('toolplane.v1.tools.environment', {
      org_id: o,
      tool_name: name,
      ...(prepare ? { prepare } : {}),
    });
    if (r.error) throw new Error(JSON.stringify(r.error));
    return r.environment;
  };
  /** Polls tools.environment (which starts nothing) until `done`; every status seen goes to `seen`. */
  const until = (
    o: string,
    name: string,
    done: (e: Environment) => boolean,
    seen: string[] = [],
  ): Promise<Environment> =>
    expectEventually(
      async () => {
        const e = await environment(o, name);
        if (seen.at(-1) !== e.status) seen.push(e.status);
        if (!done(e)) throw new Error(`the environment is still ${JSON.stringify(e)}`);
        return e;
      },
      { timeoutMs: 240_000, intervalMs: 100 },
    );
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);
  const builds = async (result: 'ok' | 'failed') => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return Number(
      new RegExp(`^toolplane_runner_environment_builds_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(text)?.[1],
    );
  };

  beforeAll(async () => {
    writeGatedSdist(house.dir, 'tpslow', '1.0', pipGate, 'slow-1');
    packGatedNpm(tarballs, 'tp-slow-npm', '1.0.0', npmGate, 'built after the gate');
    chmodSync(tarballs, 0o755);
    stack = await startCallStack(prefix, {
      'runner-local': {
        ...house.runnerEnv,
        RUNNER_NPM_LOCAL_DIRS: tarballs,
        RUNNER_NPM_OFFLINE: 'true',
        RUNNER_BUILD_WAIT_MS: '1',
        RUNNER_BUILD_RETRY_MS: '3600000',
      },
    });
    client = await RawClient.connect(prefix);
    // npm install scripts run only for orgs that opt in.
    await client.call(
      'toolplane.v1.sandbox-configs.upsert',
      { org_id: npmOrg, provider: 'local', config: { build_scripts: true } },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    house.remove();
    rmSync(tarballs, { recursive: true, force: true });
  });

  it('builds the environment of an upserted tool without any call; the first call finds it ready', async () => {
    await python(org, 'uses_ready', 'import tpready\nreturn tpready.VALUE', [{ name: 'tpready', version: '1.0' }]);
    const seen: string[] = [];
    const env = await until(org, 'uses_ready', (e) => e.status === 'ready' || e.status === 'failed', seen);
    expect(env).toMatchObject({
      provider: 'local',
      status: 'ready',
      requirements_hash: expect.stringMatching(/^py-[0-9a-f]{20}$/),
    });
    expect(Date.parse(env.updated_at!)).not.toBeNaN();
    // Polling never starts a build (prepare: false): the upsert did, before any call.
    expect(seen.every((s) => ['none', 'building', 'ready'].includes(s))).toBe(true);
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
    expect(await execute(org, 'uses_ready')).toMatchObject({
      status: 'success',
      func_return: 'ready-1',
      provider: 'local',
    });
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
    expect(await metric('toolplane_runner_calls_environment_building_total')).toBe(0);
  });

  it('answers a call whose environment is still building ENVIRONMENT_BUILDING (retryable), and runs it once built', async () => {
    await python(org, 'uses_slow', 'import tpslow\nreturn tpslow.VALUE', [{ name: 'tpslow', version: '1.0' }]);
    const building = await until(
      org,
      'uses_slow',
      (e) => e.status !== 'none' && (e.status !== 'building' || e.progress !== undefined),
    );
    expect(building).toMatchObject({
      provider: 'local',
      status: 'building',
      requirements_hash: expect.stringMatching(/^py-/),
    });
    expect(building.progress).toEqual(expect.any(String));

    const r = await execute(org, 'uses_slow');
    expect(r.error).toMatchObject({
      code: 'ENVIRONMENT_BUILDING',
      retryable: true,
      details: { provider: 'local', status: 'building', requirements_hash: building.requirements_hash },
    });
    expect(r.error.details.progress).toEqual(expect.any(String));
    expect(r.error.message).toMatch(/still being built/);
    expect(await metric('toolplane_runner_calls_environment_building_total')).toBe(1);
    expect((await environment(org, 'uses_slow')).status).toBe('building'); // the build went on

    writeFileSync(pipGate, 'go');
    expect(await until(org, 'uses_slow', (e) => e.status !== 'building')).toMatchObject({
      status: 'ready',
      requirements_hash: building.requirements_hash,
    });
    expect(await execute(org, 'uses_slow')).toMatchObject({ status: 'success', func_return: 'slow-1' });
  });

  it('reports a build that failed, naming the package; a call then answers DEPENDENCY_INSTALL_FAILED at once, and an explicit prepare retries', async () => {
    await python(org, 'uses_missing', 'return 1', [{ name: 'tp-not-in-wheelhouse', version: '9.9' }]);
    const env = await until(org, 'uses_missing', (e) => e.status === 'failed' || e.status === 'ready');
    expect(env).toMatchObject({
      provider: 'local',
      status: 'failed',
      error: { code: 'DEPENDENCY_INSTALL_FAILED', package: 'tp-not-in-wheelhouse' },
    });
    expect(env.error!.message).toContain('could not install tp-not-in-wheelhouse==9.9');
    const failures = await builds('failed');
    expect(failures).toBeGreaterThanOrEqual(1);

    const r = await execute(org, 'uses_missing');
    expect(r).toMatchObject({ status: 'error', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
    expect(r.error.message).toContain('could not install tp-not-in-wheelhouse==9.9');
    expect(await builds('failed')).toBe(failures); // the call did not build again

    await environment(org, 'uses_missing', true);
    await expectEventually(async () => expect(await builds('failed')).toBe(failures + 1), {
      timeoutMs: 240_000,
      intervalMs: 100,
    });
    expect((await environment(org, 'uses_missing')).status).toBe('failed');
  });

  it('a tool without packages is always ready, with no requirements hash', async () => {
    await python(org, 'no_packages', 'return 2', []);
    expect(await environment(org, 'no_packages')).toEqual({
      provider: 'local',
      status: 'ready',
      requirements_hash: null,
    });
    expect(await environment(org, 'no_packages', true)).toEqual({
      provider: 'local',
      status: 'ready',
      requirements_hash: null,
    });
  });

  it('TypeScript tools with npm requirements get the same: built on upsert, ENVIRONMENT_BUILDING meanwhile, failures named', async () => {
    await typescript(npmOrg, 'slow_npm', 'tp-slow-npm');
    const building = await until(
      npmOrg,
      'slow_npm',
      (e) => e.status !== 'none' && (e.status !== 'building' || e.progress !== undefined),
    );
    expect(building).toMatchObject({
      provider: 'local',
      status: 'building',
      requirements_hash: expect.stringMatching(/^npm-[0-9a-f]{20}$/),
      progress: 'npm: installing 1 package',
    });
    const r = await execute(npmOrg, 'slow_npm');
    expect(r.error).toMatchObject({
      code: 'ENVIRONMENT_BUILDING',
      retryable: true,
      details: { provider: 'local', progress: 'npm: installing 1 package' },
    });

    writeFileSync(npmGate, 'go');
    expect(await until(npmOrg, 'slow_npm', (e) => e.status !== 'building')).toMatchObject({ status: 'ready' });
    expect(await execute(npmOrg, 'slow_npm')).toMatchObject({ status: 'success', func_return: 'built after the gate' });

    await typescript(npmOrg, 'missing_npm', 'tp-missing-npm');
    const failed = await until(npmOrg, 'missing_npm', (e) => e.status === 'failed' || e.status === 'ready');
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'DEPENDENCY_INSTALL_FAILED', package: 'tp-missing-npm' },
    });
    const call = await execute(npmOrg, 'missing_npm');
    expect(call).toMatchObject({ status: 'error', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
    expect(call.error.message).toContain('could not install tp-missing-npm');
  });

  it("another org cannot read a tool's environment", async () => {
    const tool = await python(org, 'private_env', 'import tpready\nreturn tpready.VALUE', [
      { name: 'tpready', version: '1.0' },
    ]);
    expect((await environment(org, 'private_env')).provider).toBe('local');
    const byId = await req('toolplane.v1.tools.environment', { org_id: other, tool_id: tool.id, prepare: true });
    expect(byId.error).toMatchObject({ code: 'TOOL_NOT_FOUND' });
    const byName = await req('toolplane.v1.tools.environment', { org_id: other, tool_name: 'private_env' });
    expect(byName.error).toMatchObject({ code: 'TOOL_NOT_FOUND' });
    // Nor name another org in its request: the token's org is the only one it may ask about.
    const asOther = await client.req(
      'toolplane.v1.tools.environment',
      { org_id: org, tool_id: tool.id },
      { token: await client.tokenFor(other) },
    );
    expect(asOther.error).toMatchObject({ code: 'FORBIDDEN' });
  });
});
