import { expectEventually } from '@toolplane/testing';
import { randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, stopProcess, type RunningApp, type Stack } from '../support/stack';

const RUN = 'toolplane.internal.v1.runners.local.run';

/**
 * runner-local operations, talking to the runner's internal subject directly: replicas sharing a
 * queue group, SIGTERM draining, /metrics, the env as given, and the isolation start-up policy.
 */
describe('runner-local operations', () => {
  const prefix = `ops${Math.random().toString(36).slice(2, 8)}`;
  let stack: Stack;
  let second: RunningApp;
  let client: RawClient;
  const opts = () => ({ prefix, databaseUrl: testDatabaseUrl(), env: { LOG_LEVEL: 'warn', RUNNER_POOL_WARM: '2' } });
  const run = (source: string, fn: string, extra: Record<string, unknown> = {}, args: Record<string, unknown> = {}) =>
    client.req(
      RUN,
      {
        org_id: 'ops',
        tool_id: `tool-${randomUUID()}`,
        function_name: fn,
        source_code: source,
        source_type: 'python',
        args,
        env: {},
        timeout_ms: 10_000,
        ...extra,
      },
      { timeoutMs: 20_000 },
    );
  const metricsOf = async (app: RunningApp) => (await fetch(`http://127.0.0.1:${app.healthPort}/metrics`)).text();
  const runsServed = (text: string) =>
    [...text.matchAll(/^toolplane_runner_runs_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);

  beforeAll(async () => {
    stack = await startStack({ ...opts(), apps: ['runner-local'] });
    second = await startApp('runner-local', opts());
    client = await RawClient.connect(prefix);
  }, 180_000); // two runner-local replicas, each warming its pool: slow on a busy machine
  afterAll(async () => {
    await client?.close();
    if (second) await stopProcess(second.proc);
    await stack?.stop();
  });

  it('runs the tool with exactly the env it is given: the credentials service owns it, nothing here re-layers or drops a name', async () => {
    const env = { A: 'config', TOOLPLANE_REGION: 'eu-west', TOOLPLANE_ORG_ID: 'ops', TOOLPLANE_TOOL_ID: 'tool-x' };
    const r = await run(
      'import os\ndef show():\n    return {k: v for k, v in os.environ.items() if k in ("A", "B") or k.startswith("TOOLPLANE_")}\n',
      'show',
      { env },
    );
    expect(r.status).toBe('success');
    expect(r.func_return).toEqual(env);
  });

  it('applies sandbox-config limits per call (memory, processes, work dir)', async () => {
    const r = await run(
      'import resource\ndef limits():\n    return [resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0]]\n',
      'limits',
      { sandbox: { memory_mb: 256, processes: 8 } },
    );
    expect(r.func_return).toEqual([256 * 1024 * 1024, 9]); // NPROC counts the slot process too
    const w = await run('def fill():\n    open("/tmp/big", "wb").write(b"x" * 3 * 1024 * 1024)\n', 'fill', {
      sandbox: { work_dir_mb: 2 },
    });
    expect(w.status).toBe('error');
    expect(w.func_return).toMatch(/OSError: \[Errno 28\] No space left on device/);
  });

  it('shares calls between replicas through the queue group', async () => {
    const [a, b] = [stack.apps.get('runner-local')!, second];
    const before = [runsServed(await metricsOf(a)), runsServed(await metricsOf(b))];
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) => run(`def f(i):\n    return i * 2\n`, 'f', {}, { i })),
    );
    expect(replies.map((r) => r.func_return)).toEqual(Array.from({ length: 24 }, (_, i) => i * 2));
    const served = [runsServed(await metricsOf(a)) - before[0]!, runsServed(await metricsOf(b)) - before[1]!];
    expect(served[0]! + served[1]!).toBe(24);
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
  });

  it('exposes pool size, warm hits and misses, queue wait and run time on /metrics', async () => {
    const text = await metricsOf(second);
    expect(text).toMatch(/^toolplane_runner_info\{driver="bwrap",isolated="true"\} 1$/m);
    expect(text).toMatch(/^toolplane_runner_pool_slots \d+$/m);
    expect(Number(/^toolplane_runner_pool_warm_hits_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^toolplane_runner_pool_warm_misses_total \d+$/m);
    expect(text).toMatch(/^toolplane_runner_queue_wait_seconds_bucket\{le="0.001"\} \d+$/m);
    expect(Number(/^toolplane_runner_run_seconds_count (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('on SIGTERM finishes the calls in flight, then exits; the other replica keeps serving', async () => {
    // Long enough to be seen in flight on a slow box, and enough calls that the queue group gives the
    // replica being stopped some of them (with 6, all went to the other one about once in 30 runs).
    const slow = 'import time\ndef slow():\n    time.sleep(3)\n    return "finished"\n';
    const inFlight = Promise.all(Array.from({ length: 12 }, () => run(slow, 'slow')));
    // Wait until the replica being stopped holds some of them (not a fixed sleep).
    await expectEventually(async () => expect(await metricsOf(second)).toMatch(/^toolplane_runner_in_flight [1-9]/m), {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    const exit = stopProcess(second.proc, 'SIGTERM');
    const replies = await inFlight;
    expect(replies.map((r) => r.func_return)).toEqual(Array(12).fill('finished'));
    expect(await exit).toBe(0);
    expect((await run('def f():\n    return "still here"\n', 'f')).func_return).toBe('still here');
  });

  it('refuses to start without isolation unless RUNNER_ISOLATION=unsafe, which every result announces', async () => {
    await expect(
      startApp('runner-local', { ...opts(), prefix: `${prefix}x`, env: { RUNNER_BWRAP: '/nonexistent/bwrap' } }),
    ).rejects.toThrow(/sandbox isolation is not available: bubblewrap is not installed[\s\S]*RUNNER_ISOLATION=unsafe/);
    const unsafe = await startApp('runner-local', {
      ...opts(),
      prefix: `${prefix}u`,
      env: { RUNNER_ISOLATION: 'unsafe', LOG_LEVEL: 'warn' },
    });
    const other = await RawClient.connect(`${prefix}u`);
    try {
      expect(unsafe.output()).toMatch(/RUNNER_ISOLATION=unsafe: tools run WITHOUT/);
      const r = await other.req(RUN, {
        org_id: 'ops',
        tool_id: `tool-${randomUUID()}`,
        function_name: 'f',
        source_code: 'def f():\n    return 1\n',
        source_type: 'python',
        args: {},
        env: {},
        timeout_ms: 5000,
      });
      expect(r.func_return).toBe(1);
      expect(r.stderr[0]).toMatch(/RUNNER_ISOLATION=unsafe: the tool ran without sandbox isolation/);
      expect(await metricsOf(unsafe)).toMatch(/toolplane_runner_info\{driver="process",isolated="false"\} 1/);
    } finally {
      await other.close();
      await stopProcess(unsafe.proc);
    }
  });
});
