/**
 * The end user of every execution (`user_id`, e.g. the MCP gateway's JWT `sub`): recorded on the
 * record of sync, async, batch and approved calls, returned by executions.get, filtered on by
 * executions.list (never across orgs), carried by the execution events; an idempotency key reused
 * by another end user is IDEMPOTENCY_CONFLICT, never the first user's result. Shared stack.
 */
import { randomUUID } from 'node:crypto';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, eventually, executionEvents, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

describe('the end user of an execution (user_id)', () => {
  let client: RawClient;
  const org = uniqueOrg('enduser');
  const exec = (body: Record<string, unknown>, asOrg = org) =>
    client.req('toolplane.v1.tools.execute', { org_id: asOrg, ...body }, { timeoutMs: 30_000 });
  const list = (body: Record<string, unknown>, asOrg = org) =>
    client.call('toolplane.v1.executions.list', { org_id: asOrg, ...body }, 15_000);
  /** executions.get until the record exists (a plain sync call is recorded just after it answers). */
  const recordEventually = (executionId: string, asOrg = org, done: (r: any) => boolean = () => true) =>
    expectEventually(
      async () => {
        const r = await client.req('toolplane.v1.executions.get', { org_id: asOrg, execution_id: executionId });
        expect(r.error).toBeUndefined();
        expect(done(r)).toBe(true);
        return r;
      },
      { timeoutMs: 30_000 },
    );

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('fresh', 'import uuid\nreturn str(uuid.uuid4())', 'n: int') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code: pythonTool('transfer', 'return f"sent {amount}"', 'amount: int'),
          default_requires_approval: true,
        },
      },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
  });

  it('records the end user of a sync call (trimmed) and returns it from executions.get; a call naming none records null', async () => {
    const mine = await exec({ tool_name: 'add', args: { a: 1 }, user_id: '  auth0|alice ' });
    expect(mine.status).toBe('success');
    const none = await exec({ tool_name: 'add', args: { a: 2 } });
    expect((await recordEventually(mine.execution_id)).execution).toMatchObject({
      execution_id: mine.execution_id,
      user_id: 'auth0|alice',
      status: 'succeeded',
    });
    expect((await recordEventually(none.execution_id)).execution.user_id).toBeNull();
  });

  it('refuses a user_id with control characters, blank or over 256 characters: nothing runs, no record', async () => {
    for (const user_id of ['bob\nmallory', '   ', 'x'.repeat(257)]) {
      const r = await exec({ tool_name: 'add', args: { a: 1 }, user_id });
      expect([user_id, r.error?.code]).toEqual([user_id, 'CONTRACT_VIOLATION']);
      expect(r.error.details?.execution_id).toBeUndefined();
    }
  });

  it("lists each end user's executions only, newest first, and never another org's", async () => {
    const listOrg = uniqueOrg('enduser-list');
    await client.call('toolplane.v1.tools.upsert', { org_id: listOrg, tool: { source_code: ADD } }, 30_000);
    const run = async (user?: string) =>
      (await exec({ tool_name: 'add', args: { a: 1 }, ...(user ? { user_id: user } : {}) }, listOrg))
        .execution_id as string;
    const alice = [await run('alice'), await run('alice')];
    const bob = [await run('bob')];
    const nobody = await run();
    for (const id of [...alice, ...bob, nobody]) await recordEventually(id, listOrg);

    const ids = (r: any) => r.executions.map((e: any) => e.execution_id);
    const ofAlice = await list({ user_id: 'alice' }, listOrg);
    expect(ids(ofAlice)).toEqual([...alice].reverse());
    expect(ofAlice.executions.every((e: any) => e.user_id === 'alice')).toBe(true);
    expect(ids(await list({ user_id: 'bob' }, listOrg))).toEqual(bob);
    expect(ids(await list({ user_id: 'carol' }, listOrg))).toEqual([]);
    expect(ids(await list({}, listOrg)).sort()).toEqual([...alice, ...bob, nobody].sort());
    // Pages of one: alice's records once each, in order.
    const first = await list({ user_id: 'alice', limit: 1 }, listOrg);
    expect(ids(first)).toEqual([alice[1]]);
    expect(ids(await list({ user_id: 'alice', limit: 1, cursor: first.next_cursor }, listOrg))).toEqual([alice[0]]);

    // Another org: its token cannot list this org's, and its own list has no such user's records.
    const other = uniqueOrg('enduser-other');
    const otherToken = await client.tokenFor(other);
    const forbidden = await client.req(
      'toolplane.v1.executions.list',
      { org_id: listOrg, user_id: 'alice' },
      { token: otherToken },
    );
    expect(forbidden.error?.code).toBe('FORBIDDEN');
    expect(
      (await client.req('toolplane.v1.executions.list', { org_id: other, user_id: 'alice' }, { token: otherToken }))
        .executions,
    ).toEqual([]);
  });

  it('records the end user of an async call and of every call of a batch, and puts it in their events', async () => {
    const accepted = await exec({ tool_name: 'add', args: { a: 3 }, mode: 'async', user_id: 'dave' });
    expect(accepted.status).toBe('queued');
    const done = await recordEventually(accepted.execution_id, org, (r) => r.execution.status === 'succeeded');
    expect(done.execution).toMatchObject({ mode: 'async', user_id: 'dave' });
    const [completed] = await eventsFor(client, testPrefix(), [accepted.execution_id], ['completed']).then((evs) =>
      evs.filter((e) => e.kind === 'completed'),
    );
    expect(completed!.payload).toMatchObject({
      execution_id: accepted.execution_id,
      status: 'succeeded',
      user_id: 'dave',
    });

    const batch = await client.call(
      'toolplane.v1.tools.execute-batch',
      {
        org_id: org,
        user_id: 'erin',
        calls: [
          { call_id: 'ok', tool_name: 'add', args: { a: 1 } },
          { call_id: 'missing', tool_name: 'nope', args: {} },
          { call_id: 'held', tool_name: 'transfer', args: { amount: 1 } },
        ],
      },
      30_000,
    );
    expect(batch.results.map((r: any) => [r.call_id, r.status])).toEqual([
      ['ok', 'success'],
      ['missing', 'error'],
      ['held', 'pending_approval'],
    ]);
    for (const r of batch.results)
      expect([r.call_id, (await recordEventually(r.execution_id)).execution.user_id]).toEqual([r.call_id, 'erin']);
    const held = batch.results[2].execution_id;
    const [heldEvent] = await eventsFor(client, testPrefix(), [held], ['held']);
    expect(heldEvent!.payload).toMatchObject({ execution_id: held, call_id: 'held', user_id: 'erin' });
  });

  it('keeps the end user of a held call once it is approved (record and events) or denied', async () => {
    const held = await exec({ tool_name: 'transfer', args: { amount: 5 }, user_id: 'frank' });
    expect(held.status).toBe('pending_approval');
    expect((await recordEventually(held.execution_id)).execution).toMatchObject({
      status: 'pending_approval',
      user_id: 'frank',
    });
    const ran = await client.req(
      'toolplane.v1.executions.approve',
      { org_id: org, execution_id: held.execution_id },
      { timeoutMs: 30_000 },
    );
    expect(ran).toMatchObject({ execution_id: held.execution_id, status: 'success', func_return: 'sent 5' });
    expect((await recordEventually(held.execution_id)).execution).toMatchObject({
      status: 'succeeded',
      user_id: 'frank',
    });
    const kinds = ['held', 'approved', 'completed'];
    const events = await eventually(
      () => executionEvents(client, testPrefix(), [held.execution_id]),
      (evs) => kinds.every((k) => evs.some((e) => e.kind === k)),
    );
    expect(events.map((e) => [e.kind, e.payload.user_id])).toEqual([
      ['held', 'frank'],
      ['approved', 'frank'],
      ['completed', 'frank'],
    ]);

    const refused = await exec({ tool_name: 'transfer', args: { amount: 6 }, user_id: 'grace' });
    const denied = await client.req('toolplane.v1.executions.deny', {
      org_id: org,
      execution_id: refused.execution_id,
      reason: 'no',
    });
    expect(denied.execution).toMatchObject({ status: 'denied', user_id: 'grace' });
  });

  it("answers another end user's reuse of an idempotency key with IDEMPOTENCY_CONFLICT, never the first user's result", async () => {
    const key = randomUUID();
    const first = await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key, user_id: 'heidi' });
    expect(first.status).toBe('success');
    const other = await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key, user_id: 'ivan' });
    expect(other.error).toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      retryable: false,
      details: { execution_id: first.execution_id },
    });
    expect(JSON.stringify(other)).not.toContain(first.func_return);
    // No user_id is not the same user either; the same user's retry gets the first outcome.
    expect((await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key })).error?.code).toBe(
      'IDEMPOTENCY_CONFLICT',
    );
    expect(await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key, user_id: 'heidi' })).toEqual(first);
    // And the other way round: a key first used without an end user.
    const bare = randomUUID();
    const anon = await exec({ tool_name: 'fresh', args: { n: 2 }, idempotency_key: bare });
    expect(anon.status).toBe('success');
    expect(
      (await exec({ tool_name: 'fresh', args: { n: 2 }, idempotency_key: bare, user_id: 'heidi' })).error?.code,
    ).toBe('IDEMPOTENCY_CONFLICT');
    expect((await recordOf(client, org, first.execution_id)).execution).toMatchObject({
      idempotency_key: key,
      user_id: 'heidi',
    });
  });
});
