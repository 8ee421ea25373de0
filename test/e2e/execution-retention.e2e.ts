/**
 * Windows and retention: an idempotency key answers only within its window; a result is kept
 * (sealed) only for its retention, then dropped while the record stays. Own stack with short ones.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, eventually, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { startCallStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

describe('idempotency window and result retention', () => {
  const prefix = `${testPrefix()}ret`;
  const org = uniqueOrg('ret');
  let stack: Stack;
  let client: RawClient;
  const exec = (body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 60_000 });

  beforeAll(async () => {
    stack = await startCallStack(prefix, {
      executor: {
        EXECUTION_IDEMPOTENCY_WINDOW_MS: '2000',
        EXECUTION_RESULT_RETENTION_MS: '2000',
        EXECUTION_SWEEP_MS: '100',
        EXECUTION_SYNC_EVENTS: 'true',
      },
    });
    client = await RawClient.connect(prefix);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('fresh', 'import uuid\nreturn str(uuid.uuid4())') } },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('runs a call again once its key is past the window (inside it, the first outcome)', async () => {
    const key = randomUUID();
    const first = await exec({ tool_name: 'fresh', args: {}, idempotency_key: key });
    expect(first.status).toBe('success');
    // Retried until the window has passed: every answer before is the first call's, the first one after is a new run.
    const later = await eventually(
      () => exec({ tool_name: 'fresh', args: {}, idempotency_key: key }),
      (r) => r.execution_id !== first.execution_id,
      120_000,
      250,
    );
    expect(later.status).toBe('success');
    expect(later.func_return).not.toBe(first.func_return);
  });

  it('with EXECUTION_SYNC_EVENTS, a plain sync call publishes its outcome too', async () => {
    const r = await exec({ tool_name: 'fresh', args: {} });
    const events = await eventsFor(client, prefix, [r.execution_id], ['completed']);
    expect(events).toEqual([
      expect.objectContaining({
        kind: 'completed',
        payload: expect.objectContaining({ execution_id: r.execution_id, status: 'succeeded' }),
      }),
    ]);
    expect(events[0]!.payload.result).toBeUndefined();
  });

  it('drops a result after its retention; the record stays', async () => {
    const r = await exec({ tool_name: 'fresh', args: {} });
    const kept = await recordOf(client, org, r.execution_id);
    expect(kept.result.func_return).toBe(r.func_return);
    const dropped = await recordOf(client, org, r.execution_id, (x) => x.result === null, 120_000);
    expect(dropped.execution).toMatchObject({ execution_id: r.execution_id, status: 'succeeded' });
    const db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    try {
      const rows = await db.query('SELECT result_ref FROM executor.executions WHERE execution_id = $1', [
        r.execution_id,
      ]);
      expect(rows.rows).toEqual([{ result_ref: null }]);
    } finally {
      await db.end();
    }
  });
});
