import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { OtlpReceiver } from '../support/otlp-receiver';
import { CALL_APPS, startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { json, WebhookServer } from '../support/webhook-server';

const SIGNING = 'batch-webhook-signing-secret-0123456789';

/**
 * toolplane.v1.tools.execute-batch through the public API, with Letta's semantics: the calls to
 * tools with enable_parallel_execution run together, then the others one by one in their order;
 * results in the input order; a call that fails (arguments, unknown tool, an exception) is its own
 * result. The tools record when they ran (time.time() in the sandbox: the host's clock).
 */
describe('execute-batch', () => {
  const receiver = new OtlpReceiver();
  const hooks = new WebhookServer(SIGNING);
  const prefix = `${testPrefix()}bx`;
  const org = uniqueOrg('batch');
  const other = uniqueOrg('batch-other');
  let stack: Stack;
  let client: RawClient;

  const ok = async (subject: string, body: Record<string, unknown>) => {
    const r = await client.req(subject, body, { timeoutMs: 60_000 });
    if (r.error && r.results === undefined && r.status === undefined)
      throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r;
  };
  const TIMED = (seconds: number) =>
    `import time\nstart = time.time()\ntime.sleep(${seconds})\nreturn {"start": start, "end": time.time(), "x": x}`;
  const register = (o: string, name: string, body: string, parallel: boolean, params = '') =>
    ok('toolplane.v1.tools.upsert', {
      org_id: o,
      tool: { source_code: pythonTool(name, body, params), enable_parallel_execution: parallel },
    });
  const batch = (body: Record<string, unknown>, o = org) =>
    client.req('toolplane.v1.tools.execute-batch', { org_id: o, ...body }, { timeoutMs: 120_000 });

  beforeAll(async () => {
    await Promise.all([receiver.start(), hooks.start()]);
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: {
        LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      appEnv: {
        executor: { EXECUTE_BATCH_MAX_CALLS: '8', EXECUTE_BATCH_MAX_CONCURRENCY: '4' },
        'runner-local': { RUNNER_POOL_WARM: '4', RUNNER_MAX_CONCURRENCY: '8', RUNNER_MAX_CONCURRENCY_PER_ORG: '8' },
      },
    });
    client = await RawClient.connect(prefix);
    await register(org, 'slow_par', TIMED(2.5), true, 'x: int');
    await register(org, 'slower_par', TIMED(3), true, 'x: int');
    await register(org, 'quick_par', TIMED(0.1), true, 'x: int');
    await register(org, 'seq_a', TIMED(0.3), false, 'x: int');
    await register(org, 'seq_b', TIMED(0.1), false, 'x: int');
    await register(org, 'boom', 'raise ValueError("boom in the middle")', true);
    await register(other, 'theirs', 'return "other org"', true);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await Promise.all([receiver.stop(), hooks.stop()]);
  });

  it('runs the parallel-safe calls together, then the others in order, and answers in the input order', async () => {
    const calls = [
      { call_id: 'c1', tool_name: 'seq_a', args: { x: 1 } },
      { call_id: 'c2', tool_name: 'slow_par', args: { x: 2 } },
      { call_id: 'c3', tool_name: 'boom', args: {} },
      { call_id: 'c4', tool_name: 'seq_b', args: { x: 4 } },
      { call_id: 'c5', tool_name: 'slower_par', args: { x: 5 } },
      { call_id: 'c6', tool_name: 'quick_par', args: { x: 'not a number' } },
      { call_id: 'c7', tool_name: 'theirs', args: {} },
      { call_id: 'c8', tool_name: 'quick_par', args: { x: 8 } },
    ];
    const r = await batch({ calls });
    expect(r.error).toBeUndefined();
    expect(r.results.map((x: { call_id: string }) => x.call_id)).toEqual(calls.map((c) => c.call_id));
    const [c1, c2, c3, c4, c5, c6, c7, c8] = r.results;
    for (const [res, x] of [
      [c1, 1],
      [c2, 2],
      [c4, 4],
      [c5, 5],
      [c8, 8],
    ] as const) {
      expect(res).toMatchObject({ status: 'success', provider: 'local' });
      expect(res.func_return.x).toBe(x);
    }
    // One failure never fails the batch: the exception, the bad arguments, another org's tool.
    expect(c3).toMatchObject({ status: 'error', error: { code: 'TOOL_EXCEPTION' } });
    expect(c6).toMatchObject({ status: 'error', error: { code: 'INVALID_ARGUMENTS', retryable: false } });
    expect(c7).toMatchObject({ status: 'error', error: { code: 'TOOL_NOT_FOUND' } });
    expect(JSON.stringify(c7)).not.toContain('other org');

    // The two long parallel-safe calls overlapped (each started before the other ended).
    expect(c2.func_return.start).toBeLessThan(c5.func_return.end);
    expect(c5.func_return.start).toBeLessThan(c2.func_return.end);
    // The others ran after every parallel one, one by one, in their order.
    const parallelEnd = Math.max(c2.func_return.end, c5.func_return.end, c8.func_return.end);
    expect(c1.func_return.start).toBeGreaterThanOrEqual(parallelEnd);
    expect(c4.func_return.start).toBeGreaterThanOrEqual(c1.func_return.end);
    // One trace, a span per call.
    expect(new Set(r.results.map((x: { trace_id: string }) => x.trace_id)).size).toBe(1);
    const traceId = c1.trace_id;
    const spans = await receiver.waitFor(
      traceId,
      (s) => s.filter((x) => x.name.startsWith('call ')).length >= 6,
      30_000,
    );
    expect(
      spans
        .filter((x) => x.name.startsWith('call '))
        .map((x) => x.name)
        .sort(),
    ).toEqual(['call c1', 'call c2', 'call c3', 'call c4', 'call c5', 'call c8']);
  });

  it('refuses a batch over the limit before anything runs', async () => {
    const o = uniqueOrg('batch-limit');
    await register(o, 'counted', 'return 1', true);
    // Every run asks the org's webhook for credentials: it counts the calls that started.
    const url = hooks.route(`/${o}`, (_h, res) => json(res, 200, { env: {} }));
    await ok('toolplane.v1.webhooks.set', { org_id: o, url, signing_secret: SIGNING });
    const calls = Array.from({ length: 9 }, (_, i) => ({ call_id: `k${i}`, tool_name: 'counted', args: {} }));
    const r = await batch({ calls }, o);
    expect(r.error).toMatchObject({ code: 'BATCH_TOO_LARGE', retryable: false, details: { max_calls: 8, calls: 9 } });
    expect(hooks.hitsOf(`/${o}`)).toBe(0);
    // The same calls within the limit do run (and reach the webhook): the counter counts.
    const within = await batch({ calls: calls.slice(0, 2) }, o);
    expect(within.results.map((x: { status: string }) => x.status)).toEqual(['success', 'success']);
    expect(hooks.hitsOf(`/${o}`)).toBe(2);
  });

  it('refuses duplicate call ids and malformed calls as a whole', async () => {
    const dup = await batch({
      calls: [
        { call_id: 'same', tool_name: 'seq_b', args: { x: 1 } },
        { call_id: 'same', tool_name: 'seq_b', args: { x: 2 } },
      ],
    });
    expect(dup.error).toMatchObject({ code: 'CONTRACT_VIOLATION' });
    const neither = await batch({ calls: [{ call_id: 'n', args: {} }] });
    expect(neither.error).toMatchObject({ code: 'CONTRACT_VIOLATION' });
    const empty = await batch({ calls: [] });
    expect(empty.error).toMatchObject({ code: 'CONTRACT_VIOLATION' });
  });

  it('takes the batch timeout as each call’s default, and a call’s own timeout first', async () => {
    const r = await batch({
      timeout_ms: 1000,
      calls: [
        { call_id: 't1', tool_name: 'slow_par', args: { x: 1 } },
        { call_id: 't2', tool_name: 'quick_par', args: { x: 2 }, timeout_ms: 20_000 },
      ],
    });
    expect(r.results[0]).toMatchObject({ call_id: 't1', status: 'error', error: { code: 'EXECUTION_TIMEOUT' } });
    expect(r.results[1]).toMatchObject({ call_id: 't2', status: 'success' });
  });
});
