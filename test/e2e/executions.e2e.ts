/**
 * Execution records on the sync path: every call gets an id and a record with exactly one outcome
 * (executions.get / .list), its result kept only sealed, its events on the stream; records of
 * another org are never visible.
 */
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

const EXECUTION_ID = /^exec-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('execution records (sync calls)', () => {
  let client: RawClient;
  const org = uniqueOrg('rec');
  let addId: string;
  const exec = (body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 30_000 });

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    addId = (await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000)).tool
      .id;
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('boom', 'raise ValueError("no luck")') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('secretive', 'return {"marker": marker}', 'marker: str') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('elsewhere', 'return 1'), metadata_: { sandbox: 'modal' } } },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
  });

  it('gives every result an execution id whose record holds the same outcome', async () => {
    const r = await exec({ tool_name: 'add', args: { a: 40 }, agent_id: 'agent-rec' });
    expect(r.status).toBe('success');
    expect(r.execution_id).toMatch(EXECUTION_ID);
    const got = await recordOf(client, org, r.execution_id);
    expect(got.execution).toMatchObject({
      execution_id: r.execution_id,
      org_id: org,
      agent_id: 'agent-rec',
      tool_id: addId,
      tool_name: 'add',
      provider: 'local',
      status: 'succeeded',
      mode: 'sync',
      error_code: null,
      trace_id: r.trace_id,
      idempotency_key: null,
      batch_id: null,
      call_id: null,
      expires_at: null,
    });
    for (const t of ['created_at', 'started_at', 'finished_at'])
      expect(Number.isNaN(Date.parse(got.execution[t]))).toBe(false);
    expect(got.execution.duration_ms).toBeGreaterThan(0);
    // The result as the caller got it; the arguments are not kept once the call ran.
    expect(got.result).toEqual(r);
    expect(got.args).toBeNull();
  });

  it('records a tool that raises as failed with its error code, and an envelope error with the execution it names', async () => {
    const r = await exec({ tool_name: 'boom', args: {} });
    expect(r.status).toBe('error');
    const failed = await recordOf(client, org, r.execution_id);
    expect(failed.execution).toMatchObject({ status: 'failed', error_code: r.error.code });
    expect(failed.result.error.code).toBe(r.error.code);

    // No runner-modal in the shared stack: the call fails before it runs; the error names its record.
    const e = await exec({ tool_name: 'elsewhere', args: {} });
    expect(e.error.code).toBe('RUNNER_UNAVAILABLE');
    expect(e.error.details.execution_id).toMatch(EXECUTION_ID);
    const rec = await recordOf(client, org, e.error.details.execution_id);
    expect(rec.execution).toMatchObject({ status: 'failed', error_code: 'RUNNER_UNAVAILABLE', tool_name: 'elsewhere' });
    expect(rec.result.error.code).toBe('RUNNER_UNAVAILABLE');
  });

  it('creates no record for a call refused before it runs (unknown tool, bad args)', async () => {
    const bad = await exec({ tool_name: 'add', args: { a: 'x' } });
    expect(bad.error.code).toBe('INVALID_ARGUMENTS');
    expect(bad.error.details.execution_id).toBeUndefined();
  });

  it('lists records newest first, filtered by agent, tool and state, a page at a time', async () => {
    const listOrg = uniqueOrg('list');
    await client.call('toolplane.v1.tools.upsert', { org_id: listOrg, tool: { source_code: ADD } }, 30_000);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: listOrg, tool: { source_code: pythonTool('boom', 'raise ValueError("x")') } },
      30_000,
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await client.req('toolplane.v1.tools.execute', {
            org_id: listOrg,
            tool_name: 'add',
            args: { a: i },
            agent_id: i % 2 ? 'odd' : 'even',
          })
        ).execution_id,
      );
    const failed = (await client.req('toolplane.v1.tools.execute', { org_id: listOrg, tool_name: 'boom', args: {} }))
      .execution_id;
    for (const id of [...ids, failed]) await recordOf(client, listOrg, id);
    const list = (body: Record<string, unknown>) =>
      client.call('toolplane.v1.executions.list', { org_id: listOrg, ...body }, 15_000);
    const all = await list({});
    expect(all.executions.map((e: any) => e.execution_id)).toEqual([failed, ...[...ids].reverse()]);
    expect(all.next_cursor).toBeNull();
    expect((await list({ agent_id: 'odd' })).executions.map((e: any) => e.execution_id)).toEqual([ids[3], ids[1]]);
    expect((await list({ status: 'failed' })).executions.map((e: any) => e.execution_id)).toEqual([failed]);
    const addTool = all.executions.find((e: any) => e.tool_name === 'add').tool_id;
    expect((await list({ tool_id: addTool })).executions).toHaveLength(5);
    // Pages of 2: every record once, in order.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.executions.length).toBeLessThanOrEqual(2);
      seen.push(...page.executions.map((e: any) => e.execution_id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(all.executions.map((e: any) => e.execution_id));
    expect((await client.req('toolplane.v1.executions.list', { org_id: listOrg, cursor: 'bm9wZQ' })).error.code).toBe(
      'CONTRACT_VIOLATION',
    );
  });

  it("never shows another org's record", async () => {
    const r = await exec({ tool_name: 'add', args: { a: 1 } });
    await recordOf(client, org, r.execution_id);
    const other = uniqueOrg('other');
    const got = await client.req('toolplane.v1.executions.get', { org_id: other, execution_id: r.execution_id });
    expect(got.error.code).toBe('EXECUTION_NOT_FOUND');
    expect((await client.call('toolplane.v1.executions.list', { org_id: other }, 15_000)).executions).toEqual([]);
    expect(
      (
        await client.req('toolplane.v1.executions.get', {
          org_id: org,
          execution_id: 'exec-00000000-0000-4000-8000-000000000000',
        })
      ).error.code,
    ).toBe('EXECUTION_NOT_FOUND');
  });

  it('announces each durable outcome on the events stream (completed, failed), without args or results', async () => {
    // Durable calls (here: with an idempotency key) always publish their outcome; plain sync calls
    // only with EXECUTION_SYNC_EVENTS (their caller has the outcome, executions.get the record).
    const key = Math.random().toString(36).slice(2);
    const ok = await exec({ tool_name: 'add', args: { a: 2 }, idempotency_key: `ok-${key}` });
    const bad = await exec({ tool_name: 'boom', args: {}, idempotency_key: `bad-${key}` });
    const events = await eventsFor(client, testPrefix(), [ok.execution_id, bad.execution_id], ['completed', 'failed']);
    expect(events.find((e) => e.payload.execution_id === ok.execution_id)).toMatchObject({
      kind: 'completed',
      payload: { org_id: org, status: 'succeeded', tool_name: 'add' },
    });
    expect(events.find((e) => e.payload.execution_id === bad.execution_id)).toMatchObject({
      kind: 'failed',
      payload: { status: 'failed' },
    });
    for (const e of events) {
      expect(e.payload.args).toBeUndefined();
      expect(e.payload.result).toBeUndefined();
    }
  });

  it('keeps results only sealed: nothing the tool returned is readable in the database', async () => {
    const marker = `m4rk3r-${Math.random().toString(36).slice(2)}`;
    const r = await exec({ tool_name: 'secretive', args: { marker } });
    expect(r.func_return).toEqual({ marker });
    const got = await recordOf(client, org, r.execution_id);
    expect(got.result.func_return).toEqual({ marker });
    const db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    try {
      const dump = await db.query(
        `SELECT (SELECT coalesce(string_agg(t::text, ''), '') FROM executor.executions t) || (SELECT coalesce(string_agg(p::text, ''), '') FROM executor.sealed_payloads p) || (SELECT coalesce(string_agg(o::text, ''), '') FROM executor.event_outbox o) AS all`,
      );
      expect(dump.rows[0].all).toContain(r.execution_id);
      expect(dump.rows[0].all).not.toContain(marker);
    } finally {
      await db.end();
    }
  });

  it('gives every call of a batch an execution id and a record', async () => {
    const b = await client.call(
      'toolplane.v1.tools.execute-batch',
      {
        org_id: org,
        calls: [
          { call_id: 'one', tool_name: 'add', args: { a: 1 } },
          { call_id: 'two', tool_name: 'nope', args: {} },
        ],
      },
      30_000,
    );
    const [one, two] = b.results;
    expect(one).toMatchObject({ call_id: 'one', status: 'success', func_return: 3 });
    expect(two).toMatchObject({ call_id: 'two', status: 'error', error: { code: 'TOOL_NOT_FOUND' } });
    const r1 = await recordOf(client, org, one.execution_id);
    const r2 = await recordOf(client, org, two.execution_id);
    expect(r1.execution).toMatchObject({ call_id: 'one', status: 'succeeded' });
    expect(r2.execution).toMatchObject({
      call_id: 'two',
      status: 'failed',
      error_code: 'TOOL_NOT_FOUND',
      tool_id: null,
      tool_name: 'nope',
    });
    expect(r1.execution.batch_id).toMatch(/^batch-/);
    expect(r2.execution.batch_id).toBe(r1.execution.batch_id);
  });
});
