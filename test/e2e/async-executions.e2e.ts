/**
 * Async mode: tools.execute answers `{execution_id, status: "queued"}` at once; the call runs from
 * the JetStream work queue (WorkQueue retention, explicit acks, bounded redelivery); its outcome is
 * recorded, announced and read with executions.get.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

describe('async executions', () => {
  let client: RawClient;
  const org = uniqueOrg('async');
  const exec = (body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, mode: 'async', ...body }, { timeoutMs: 30_000 });
  const settled = (id: string) =>
    recordOf(client, org, id, (r) => r.execution.status === 'succeeded' || r.execution.status === 'failed', 120_000);

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('boom', 'raise ValueError("async no luck")') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('env_echo', 'import os\nreturn os.environ.get("CALL_TOKEN")') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('sleepy', 'import time\ntime.sleep(30)\nreturn "woke"') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code: pythonTool('stamp', 'import uuid\nreturn f"{i}:{uuid.uuid4()}"', 'i: int'),
          enable_parallel_execution: true,
        },
      },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
  });

  it('answers queued at once, then runs it; the record and executions.get give the result', async () => {
    const r = await exec({ tool_name: 'add', args: { a: 20, b: 22 }, agent_id: 'bg' });
    expect(r).toEqual({ execution_id: expect.stringMatching(/^exec-/), status: 'queued' });
    const done = await settled(r.execution_id);
    expect(done.execution).toMatchObject({
      status: 'succeeded',
      mode: 'async',
      agent_id: 'bg',
      provider: 'local',
      error_code: null,
    });
    expect(done.result).toMatchObject({ execution_id: r.execution_id, status: 'success', func_return: 42 });
    expect(done.args).toBeNull();
    const events = await eventsFor(client, testPrefix(), [r.execution_id], ['completed']);
    expect(events.map((e) => e.kind)).toEqual(['completed']);
  });

  it('records a failing async call as failed, and announces it', async () => {
    const r = await exec({ tool_name: 'boom', args: {} });
    const done = await settled(r.execution_id);
    expect(done.execution).toMatchObject({ status: 'failed', error_code: 'TOOL_EXCEPTION' });
    expect(done.result.stderr.join('')).toContain('async no luck');
    await eventsFor(client, testPrefix(), [r.execution_id], ['failed']);
  });

  it('keeps the waiting call (args and per-call env) only sealed, and runs it with them', async () => {
    const marker = `tok-${Math.random().toString(36).slice(2)}`;
    const r = await exec({ tool_name: 'env_echo', args: {}, env: { CALL_TOKEN: marker } });
    const done = await settled(r.execution_id);
    expect(done.result.func_return).toBe(marker);
    const db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    try {
      const dump = await db.query(
        `SELECT (SELECT coalesce(string_agg(t::text, ''), '') FROM executor.executions t) || (SELECT coalesce(string_agg(p::text, ''), '') FROM executor.sealed_payloads p) || (SELECT coalesce(string_agg(o::text, ''), '') FROM executor.event_outbox o) AS all`,
      );
      expect(dump.rows[0].all).not.toContain(marker);
    } finally {
      await db.end();
    }
  });

  it('applies the call’s timeout_ms to the queued run', async () => {
    const r = await exec({ tool_name: 'sleepy', args: {}, timeout_ms: 1000 });
    const done = await settled(r.execution_id);
    expect(done.execution).toMatchObject({ status: 'failed', error_code: 'EXECUTION_TIMEOUT' });
  });

  it('fails a queued call whose tool was deleted meanwhile, without running anything', async () => {
    const temp = uniqueOrg('async-del');
    const { tool } = await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: temp, tool: { source_code: pythonTool('gone_soon', 'import time\ntime.sleep(1)\nreturn 1') } },
      30_000,
    );
    // Hold the queue's attention elsewhere is not needed: delete right after queueing; whichever comes first, the outcome is one of two.
    const r = await client.req('toolplane.v1.tools.execute', {
      org_id: temp,
      tool_id: tool.id,
      args: {},
      mode: 'async',
    });
    await client.call('toolplane.v1.tools.delete', { org_id: temp, id: tool.id }, 15_000);
    const done = await recordOf(
      client,
      temp,
      r.execution_id,
      (x) => x.execution.status === 'succeeded' || x.execution.status === 'failed',
      120_000,
    );
    if (done.execution.status === 'failed') expect(done.execution.error_code).toBe('TOOL_NOT_FOUND');
    else expect(done.result.func_return).toBe(1);
  });

  it('runs a backlog of 100 queued calls, each exactly once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await exec({ tool_name: 'stamp', args: { i } })).execution_id);
    expect(new Set(ids).size).toBe(100);
    const results = await Promise.all(ids.map((id) => settled(id)));
    expect(results.map((r) => r.execution.status)).toEqual(ids.map(() => 'succeeded'));
    expect(results.map((r) => Number(String(r.result.func_return).split(':')[0]))).toEqual(ids.map((_, i) => i));
    // Every record ran once: one claim each, and each one's event once.
    const events = await eventsFor(client, testPrefix(), ids, ['completed']);
    expect(events.filter((e) => e.kind === 'completed')).toHaveLength(100);
  });

  it('rides a JetStream work queue: WorkQueue retention, explicit acks, bounded redelivery', async () => {
    const jsm = await jetstreamManager(client.nc);
    const stream = await jsm.streams.info(`${testPrefix()}_TOOLPLANE_EXECUTIONS`);
    expect(stream.config.retention).toBe('workqueue');
    expect(stream.config.subjects).toEqual([`${testPrefix()}.toolplane.internal.v1.work.executions`]);
    const consumer = await jsm.consumers.info(stream.config.name, 'executor');
    expect(consumer.config.ack_policy).toBe('explicit');
    expect(consumer.config.max_deliver).toBeGreaterThan(0);
  });
});
