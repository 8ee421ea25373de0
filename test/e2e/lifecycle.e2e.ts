import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, startApp, startStack, stopProcess, type Stack, type StackOptions } from '../support/stack';
import { hostProcessesWith, waitNoProcessWith } from '../support/processes';
import { pythonTool } from '../support/tools';

describe('health, graceful shutdown and a runner dying mid-call', () => {
  let stack: Stack;
  let client: RawClient;
  const prefix = `${testPrefix()}lc`;
  const org = uniqueOrg('life');
  let opts: StackOptions;

  beforeAll(async () => {
    opts = { prefix, databaseUrl: testDatabaseUrl(), appEnv: { executor: { RUNNER_REPLY_MARGIN_MS: '1000' } } };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    const up = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: pythonTool('nap', 'import time\ntime.sleep(1.5)\nreturn "rested"') },
    });
    expect(up.tool.name).toBe('nap');
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  /** Waits until the runner holds a call (not a fixed sleep: the call may take a while to get there). */
  const runnerBusy = () =>
    expectEventually(
      async () =>
        expect(await metricOf(stack.apps.get('runner-local')!, 'toolplane_runner_in_flight')).toBeGreaterThan(0),
      { timeoutMs: 60_000, intervalMs: 20 },
    );

  it('serves /healthz and /readyz with its dependency checks', async () => {
    for (const app of stack.apps.values()) {
      expect((await fetch(`http://127.0.0.1:${app.healthPort}/healthz`)).status).toBe(200);
      const ready = await fetch(`http://127.0.0.1:${app.healthPort}/readyz`);
      expect(ready.status).toBe(200);
      const body = (await ready.json()) as { checks: Record<string, string> };
      expect(body.checks.nats).toBe('ok');
      if (app.name === 'registry') expect(body.checks.postgres).toBe('ok');
    }
  });

  it('finishes an in-flight call when the runner gets SIGTERM, then exits 0', async () => {
    const call = client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'nap', args: {} });
    await runnerBusy();
    const exit = stack.stopApp('runner-local', 'SIGTERM');
    const r = await call;
    expect(r.status).toBe('success');
    expect(r.func_return).toBe('rested');
    expect(await exit).toBe(0);
    const after = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'nap', args: {} });
    expect(after.error.code).toBe('RUNNER_UNAVAILABLE');
  });

  it('answers a typed, retryable error when the runner is killed mid-call, and recovers when it is back', async () => {
    stack.apps.set('runner-local', await startApp('runner-local', opts));
    const call = client.req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'nap',
      args: {},
      timeout_ms: 2000,
    });
    await runnerBusy();
    await stack.stopApp('runner-local', 'SIGKILL');
    const r = await call;
    expect(r.error).toMatchObject({ code: 'REQUEST_TIMEOUT', retryable: true });
    stack.apps.set('runner-local', await startApp('runner-local', opts));
    const again = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'nap', args: {} });
    expect(again.func_return).toBe('rested');
  });

  it('answers SERVICE_RESTARTING to a call still running when an executor’s grace ends, stops it on the runner; another replica takes new calls', async () => {
    // The tool would run for 5 minutes; a background `sleep <marker>` shows whether the runner stopped it.
    const marker = `${Math.floor(Math.random() * 1e6)}.75`;
    const up = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool(
          'long_nap',
          `import subprocess, time\nsubprocess.Popen(["/bin/sleep", "${marker}"])\ntime.sleep(300)\nreturn "late"`,
        ),
      },
    });
    expect(up.tool.name).toBe('long_nap');
    // Only an executor with a short grace serves while the long call starts.
    await stack.stopApp('executor');
    stack.apps.set(
      'executor',
      await startApp('executor', { ...opts, appEnv: { executor: { SHUTDOWN_GRACE_MS: '300' } } }),
    );
    const call = client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'long_nap', args: {}, timeout_ms: 300_000 },
      { timeoutMs: 60_000 },
    );
    await runnerBusy();
    await expectEventually(() => expect(hostProcessesWith(marker).length).toBeGreaterThan(0), {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    const other = await startApp('executor', opts);
    const leaving = stack.apps.get('executor')!;
    stack.apps.set('executor', other);
    const exit = stopProcess(leaving.proc, 'SIGTERM');
    const r = await call;
    expect(r.error).toMatchObject({
      code: 'SERVICE_RESTARTING',
      retryable: true,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(await exit).toBe(0);
    // Its last log lines may still be in the pipe when the exit is seen.
    await expectEventually(() =>
      expect(leaving.output()).toMatch(/1 request\(s\) still running after 300 ms are answered SERVICE_RESTARTING/),
    );
    // The executor told the runner: the call is stopped there too (its processes are gone, its place is free).
    expect(await waitNoProcessWith(marker, 30_000)).toEqual([]);
    expect(stack.apps.get('runner-local')!.output()).toMatch(/was abandoned by the executor: stopping it/);
    // The remaining replica serves at once (the leaving one left the queue group first).
    const again = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'nap', args: {} });
    expect(again.func_return).toBe('rested');
  });
});
