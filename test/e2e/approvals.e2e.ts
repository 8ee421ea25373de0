/**
 * Human approval (Letta's default_requires_approval): a call that needs it runs nothing and waits
 * as pending_approval — across executor restarts — until approved (it runs, once), denied (the
 * agent gets the reference system's tool error) or expired. Own stack: executors are restarted.
 */
import { randomUUID } from 'node:crypto';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { CALL_APPS, startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { ADD, pythonTool } from '../support/tools';

describe('approvals', () => {
  const prefix = `${testPrefix()}appr`;
  const org = uniqueOrg('appr');
  let stack: Stack;
  let opts: StackOptions;
  let client: RawClient;
  let transferId: string;
  const req = (subject: string, body: Record<string, unknown>, asOrg = org) =>
    client.req(`toolplane.v1.${subject}`, { org_id: asOrg, ...body }, { timeoutMs: 60_000 });
  const exec = (body: Record<string, unknown>) => req('tools.execute', body);
  const runs = async () => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return [...text.matchAll(/^toolplane_runner_runs_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const restartExecutor = async (env: Record<string, string> = {}) => {
    await stack.stopApp('executor');
    stack.apps.set('executor', await startApp('executor', { ...opts, appEnv: { executor: env } }));
  };

  beforeAll(async () => {
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
    };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    transferId = (
      await client.call(
        'toolplane.v1.tools.upsert',
        {
          org_id: org,
          tool: {
            source_code: pythonTool('transfer', 'return f"sent {amount} to {to}"', 'amount: int, to: str'),
            default_requires_approval: true,
          },
        },
        30_000,
      )
    ).tool.id;
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000);
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          tool_type: 'client',
          default_requires_approval: true,
          json_schema: { name: 'wipe_disk', description: 'Wipe.', parameters: { type: 'object', properties: {} } },
        },
      },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('holds the call, runs nothing, and runs it once when approved', async () => {
    const before = await runs();
    const held = await exec({ tool_name: 'transfer', args: { amount: 5, to: 'bob' }, agent_id: 'treasurer' });
    expect(held).toEqual({
      status: 'pending_approval',
      execution_id: expect.stringMatching(/^exec-/),
      tool_id: transferId,
      tool_name: 'transfer',
      args: { amount: 5, to: 'bob' },
      expires_at: expect.any(String),
    });
    const pending = await recordOf(client, org, held.execution_id);
    expect(pending.execution).toMatchObject({
      status: 'pending_approval',
      agent_id: 'treasurer',
      expires_at: held.expires_at,
    });
    expect(pending.args).toEqual({ amount: 5, to: 'bob' });
    expect(await runs()).toBe(before);

    const done = await req('executions.approve', { execution_id: held.execution_id });
    expect(done).toMatchObject({ execution_id: held.execution_id, status: 'success', func_return: 'sent 5 to bob' });
    expect(await runs()).toBe(before + 1);
    expect((await recordOf(client, org, held.execution_id)).execution).toMatchObject({
      status: 'succeeded',
      expires_at: null,
    });

    const twice = await req('executions.approve', { execution_id: held.execution_id });
    expect(twice.error).toMatchObject({ code: 'EXECUTION_NOT_PENDING', details: { status: 'succeeded' } });
    expect(await runs()).toBe(before + 1);
    const events = await eventsFor(client, prefix, [held.execution_id], ['completed']);
    expect(events.map((e) => e.kind)).toEqual(['held', 'approved', 'completed']);
  });

  it("follows the agent's own setting for the tool over the tool's default (agents.tools.attach requires_approval)", async () => {
    const before = await runs();
    await client.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: 'trusted', tool_names: ['transfer'], requires_approval: false },
      30_000,
    );
    await client.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: 'careful', tool_names: ['add'], requires_approval: true },
      30_000,
    );
    expect(await exec({ tool_name: 'transfer', args: { amount: 1, to: 'ivy' }, agent_id: 'trusted' })).toMatchObject({
      status: 'success',
      func_return: 'sent 1 to ivy',
    });
    expect((await exec({ tool_name: 'add', args: { a: 1 }, agent_id: 'careful' })).status).toBe('pending_approval');
    // Another agent, or none: the tools' defaults.
    expect((await exec({ tool_name: 'transfer', args: { amount: 1, to: 'ivy' }, agent_id: 'someone' })).status).toBe(
      'pending_approval',
    );
    expect((await exec({ tool_name: 'add', args: { a: 1 } })).status).toBe('success');
    // Cleared override: the default again (the agent's settings are re-read after the change).
    await client.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: 'trusted', tool_names: ['transfer'], requires_approval: null },
      30_000,
    );
    expect((await exec({ tool_name: 'transfer', args: { amount: 1, to: 'ivy' }, agent_id: 'trusted' })).status).toBe(
      'pending_approval',
    );
    expect(await runs()).toBe(before + 2);
  });

  it('runs approved args an approver corrected, after checking them again', async () => {
    const held = await exec({ tool_name: 'transfer', args: { amount: 500, to: 'eve' } });
    const bad = await req('executions.approve', {
      execution_id: held.execution_id,
      args: { amount: 'lots', to: 'eve' },
    });
    expect(bad.error.code).toBe('INVALID_ARGUMENTS');
    expect((await recordOf(client, org, held.execution_id)).execution.status).toBe('pending_approval');
    const done = await req('executions.approve', { execution_id: held.execution_id, args: { amount: 50, to: 'eve' } });
    expect(done.func_return).toBe('sent 50 to eve');
  });

  it('denies: nothing runs, the agent gets the reference system’s tool error, and it can no longer be approved', async () => {
    const before = await runs();
    const held = await exec({ tool_name: 'transfer', args: { amount: 1, to: 'mallory' } });
    const denied = await req('executions.deny', { execution_id: held.execution_id, reason: 'not to mallory' });
    const message = 'Error: request to call tool denied. User reason: not to mallory';
    expect(denied.execution).toMatchObject({ status: 'denied', error_code: 'EXECUTION_DENIED' });
    expect(denied.result).toMatchObject({
      execution_id: held.execution_id,
      status: 'error',
      func_return: message,
      error: { code: 'EXECUTION_DENIED', message },
    });
    expect((await recordOf(client, org, held.execution_id)).result).toEqual(denied.result);
    expect((await req('executions.approve', { execution_id: held.execution_id })).error).toMatchObject({
      code: 'EXECUTION_NOT_PENDING',
      details: { status: 'denied' },
    });
    expect((await req('executions.deny', { execution_id: held.execution_id, reason: 'again' })).error.code).toBe(
      'EXECUTION_NOT_PENDING',
    );
    expect(await runs()).toBe(before);
    const events = await eventsFor(client, prefix, [held.execution_id], ['denied']);
    expect(events.map((e) => e.kind)).toEqual(['held', 'denied']);
  });

  it("cannot approve or deny another org's execution", async () => {
    const held = await exec({ tool_name: 'transfer', args: { amount: 2, to: 'bob' } });
    const other = uniqueOrg('apprx');
    expect((await req('executions.approve', { execution_id: held.execution_id }, other)).error.code).toBe(
      'EXECUTION_NOT_FOUND',
    );
    expect((await req('executions.deny', { execution_id: held.execution_id, reason: 'x' }, other)).error.code).toBe(
      'EXECUTION_NOT_FOUND',
    );
    expect((await recordOf(client, org, held.execution_id)).execution.status).toBe('pending_approval');
  });

  it('an async call needing approval is queued once approved, then runs from the work queue', async () => {
    const held = await exec({ tool_name: 'transfer', args: { amount: 3, to: 'carol' }, mode: 'async' });
    expect(held.status).toBe('pending_approval');
    const approved = await req('executions.approve', { execution_id: held.execution_id });
    expect(approved).toEqual({ execution_id: held.execution_id, status: 'queued' });
    const done = await recordOf(client, org, held.execution_id, (r) => r.execution.status === 'succeeded');
    expect(done.result.func_return).toBe('sent 3 to carol');
    expect(done.execution.mode).toBe('async');
  });

  it('a client-side tool needing approval goes to its client once approved', async () => {
    const held = await exec({ tool_name: 'wipe_disk', args: {} });
    expect(held.status).toBe('pending_approval');
    const approved = await req('executions.approve', { execution_id: held.execution_id });
    expect(approved).toMatchObject({ status: 'awaiting_client', execution_id: held.execution_id, args: {} });
    const done = await req('executions.submit-result', {
      execution_id: held.execution_id,
      status: 'success',
      func_return: 'wiped',
    });
    expect(done.execution.status).toBe('succeeded');
  });

  it('answers an idempotent retry of a held call with the same pending execution', async () => {
    const key = randomUUID();
    const held = await exec({ tool_name: 'transfer', args: { amount: 4, to: 'dan' }, idempotency_key: key });
    const again = await exec({ tool_name: 'transfer', args: { amount: 4, to: 'dan' }, idempotency_key: key });
    expect(again).toEqual(held);
  });

  it('handles the three kinds in one batch: runs, held for approval, handed to the client', async () => {
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          tool_type: 'client',
          json_schema: {
            name: 'ask_user',
            description: 'Ask.',
            parameters: { type: 'object', properties: { q: { type: 'string' } } },
          },
        },
      },
      30_000,
    );
    const before = await runs();
    const b = await client.call(
      'toolplane.v1.tools.execute-batch',
      {
        org_id: org,
        agent_id: 'stepper',
        calls: [
          { call_id: 'c-add', tool_name: 'add', args: { a: 1 } },
          { call_id: 'c-transfer', tool_name: 'transfer', args: { amount: 9, to: 'zoe' } },
          { call_id: 'c-ask', tool_name: 'ask_user', args: { q: 'ok?' } },
        ],
      },
      60_000,
    );
    const [add, transfer, ask] = b.results;
    expect(add).toMatchObject({ call_id: 'c-add', status: 'success', func_return: 3 });
    expect(transfer).toMatchObject({
      call_id: 'c-transfer',
      status: 'pending_approval',
      tool_name: 'transfer',
      args: { amount: 9, to: 'zoe' },
    });
    expect(ask).toMatchObject({
      call_id: 'c-ask',
      status: 'awaiting_client',
      tool_name: 'ask_user',
      args: { q: 'ok?' },
    });
    expect(await runs()).toBe(before + 1);
    const held = await recordOf(client, org, transfer.execution_id);
    expect(held.execution).toMatchObject({ call_id: 'c-transfer', agent_id: 'stepper', status: 'pending_approval' });
    expect(held.execution.batch_id).toMatch(/^batch-/);
    expect((await req('executions.approve', { execution_id: transfer.execution_id })).func_return).toBe(
      'sent 9 to zoe',
    );
    expect(
      (await req('executions.submit-result', { execution_id: ask.execution_id, status: 'success', func_return: 'yes' }))
        .execution.status,
    ).toBe('succeeded');
  });

  it('keeps pending approvals across executor restarts, and expires them after their TTL', async () => {
    const held = await exec({ tool_name: 'transfer', args: { amount: 6, to: 'fay' } });
    await restartExecutor();
    expect((await req('executions.approve', { execution_id: held.execution_id })).func_return).toBe('sent 6 to fay');

    // An executor with a short approval TTL: its held calls expire (the sweep, or an approve that comes too late).
    await restartExecutor({ EXECUTION_APPROVAL_TTL_MS: '1500', EXECUTION_SWEEP_MS: '100' });
    const swept = await exec({ tool_name: 'transfer', args: { amount: 7, to: 'gus' } });
    const late = await exec({ tool_name: 'transfer', args: { amount: 8, to: 'hal' } });
    const expired = await recordOf(client, org, swept.execution_id, (r) => r.execution.status === 'expired');
    expect(expired.execution.error_code).toBe('EXECUTION_EXPIRED');
    expect(expired.result).toMatchObject({ status: 'error', error: { code: 'EXECUTION_EXPIRED' } });
    expect(expired.args).toBeNull();
    // The second held call is late only once its own TTL has passed too (it was held after the first).
    await recordOf(client, org, late.execution_id, (r) => r.execution.status === 'expired');
    const approveLate = await req('executions.approve', { execution_id: late.execution_id });
    expect(approveLate.error).toMatchObject({ code: 'EXECUTION_NOT_PENDING', details: { status: 'expired' } });
    const events = await eventsFor(client, prefix, [swept.execution_id], ['expired']);
    expect(events.map((e) => e.kind)).toEqual(['held', 'expired']);
    await restartExecutor();
  }, 240_000); // three executor restarts: each a drain, a start and a readiness wait, slow on a busy machine
});
