import { headers as natsHeaders } from '@nats-io/transport-node';
import { Headers } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, startStack, type Stack } from '../support/stack';

const RUN = 'toolplane.internal.v1.runners.local.run';

/**
 * The deadline a service puts on its request (toolplane-deadline, set by the messaging client) is
 * honoured by the serving side: once the caller has stopped waiting, the work done for it stops —
 * here a runner kills a tool that would otherwise run for minutes.
 */
describe('deadlines: work stops when its caller has given up', () => {
  const prefix = `dl${Math.random().toString(36).slice(2, 8)}`;
  let stack: Stack;
  let client: RawClient;
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);
  /** Every sample of a labelled metric, summed. */
  const total = async (name: string): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  };

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['runner-local'],
      env: { LOG_LEVEL: 'warn' },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  const call = (fn: string, source: string, headers?: ReturnType<typeof natsHeaders>, timeoutMs = 20_000) =>
    client.req(
      RUN,
      {
        org_id: 'dl',
        tool_id: `tool-${randomUUID()}`,
        function_name: fn,
        source_code: source,
        source_type: 'python',
        args: {},
        env: {},
        timeout_ms: 600_000,
      },
      { timeoutMs, ...(headers ? { headers } : {}) },
    );

  it('a runner stops a call whose caller stopped waiting (its deadline passed), long before the tool would end', async () => {
    const before = await total('toolplane_runner_runs_total');
    const h = natsHeaders();
    h.set(Headers.DEADLINE, String(Date.now() + 300));
    // The caller waits as long as its deadline says, and gives up.
    await expect(call('sleepy', 'import time\ndef sleepy():\n    time.sleep(600)\n', h, 300)).rejects.toThrow(
      /timeout/i,
    );
    // The runner gives the call up too (the tool would sleep ten minutes): nothing in flight, the run counted as ended.
    await expectEventually(
      async () => {
        expect(await metric('toolplane_runner_in_flight')).toBe(0);
        expect(await total('toolplane_runner_runs_total')).toBe(before + 1);
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  });

  it('a request without a deadline, or with one not yet passed, runs to its end', async () => {
    const h = natsHeaders();
    h.set(Headers.DEADLINE, String(Date.now() + 15_000));
    const r = await call('quick', 'import time\ndef quick():\n    time.sleep(0.3)\n    return "done"\n', h);
    expect(r).toMatchObject({ status: 'success', func_return: 'done' });
    const plain = await call('plain', 'def plain():\n    return "plain"\n');
    expect(plain).toMatchObject({ status: 'success', func_return: 'plain' });
  });
});
