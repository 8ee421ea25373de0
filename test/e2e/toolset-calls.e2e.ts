/**
 * Calls made through a published tool set (tools.execute `toolset`, as the MCP gateway's
 * /mcp/toolsets/<name> makes them): the set's requires_approval decides (true holds a member whose
 * default does not, null follows each tool's default, false runs one whose default holds it); only
 * members are callable (any other tool is TOOL_NOT_FOUND naming the set, nothing runs); membership
 * and policy are live (a tool tagged later joins, a changed policy applies); the record and its
 * events carry the set, and executions.list filters by it. Then through the gateway with the MCP
 * SDK's client: the set's instructions at initialize, 404 for an unknown set, approval by
 * elicitation or a tool error naming the execution, list_changed after the set gains a tool.
 * Shared stack.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, eventually, executionEvents, recordOf } from '../support/executions';
import { mcpClient, toolsetEndpoint } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

describe('calls through a tool set', () => {
  let nats: RawClient;
  const org = uniqueOrg('tscall');
  const tools: Record<string, any> = {};
  const clients: Client[] = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const exec = (body: Record<string, unknown>) =>
    nats.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 30_000 });
  const req = async (verb: string, body: Record<string, unknown>) =>
    ok(await nats.req(`toolplane.v1.${verb}`, { org_id: org, ...body }, { timeoutMs: 30_000 }));
  const upsertSet = (toolset: Record<string, unknown>) => req('toolsets.upsert', { toolset });

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    tools.add = (await req('tools.upsert', { tool: { source_code: ADD } })).tool;
    tools.transfer = (
      await req('tools.upsert', {
        tool: {
          source_code: pythonTool('transfer', 'return f"sent {amount}"', 'amount: int'),
          default_requires_approval: true,
        },
      })
    ).tool;
    tools.secret = (await req('tools.upsert', { tool: { source_code: pythonTool('secret', 'return "leaked"') } })).tool;
    tools.later = (await req('tools.upsert', { tool: { source_code: pythonTool('later', 'return "later"') } })).tool;
    await upsertSet({ name: 'guarded', tool_names: ['add'], requires_approval: true });
    await upsertSet({ name: 'defaults', tool_names: ['add', 'transfer'] });
    await upsertSet({ name: 'relaxed', tool_ids: [tools.transfer.id], requires_approval: false });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await nats?.close();
  });

  it('holds a member through a set that requires approval (its default does not), and runs it once approved; record and events name the set', async () => {
    const held = await exec({ toolset: 'guarded', tool_name: 'add', args: { a: 1, b: 2 } });
    expect(held).toMatchObject({
      status: 'pending_approval',
      tool_id: tools.add.id,
      tool_name: 'add',
      args: { a: 1, b: 2 },
    });
    const pending = await recordOf(nats, org, held.execution_id);
    expect(pending.execution).toMatchObject({ status: 'pending_approval', toolset: 'guarded', agent_id: null });
    const approved = await req('executions.approve', { execution_id: held.execution_id });
    expect(approved).toMatchObject({ status: 'success', func_return: 3 });
    expect((await recordOf(nats, org, held.execution_id)).execution).toMatchObject({
      status: 'succeeded',
      toolset: 'guarded',
    });
    const events = await eventually(
      () => executionEvents(nats, testPrefix(), [held.execution_id]),
      (evs) => ['held', 'approved', 'completed'].every((k) => evs.some((e) => e.kind === k)),
    );
    expect(events.map((e) => [e.kind, e.payload.toolset]).sort()).toEqual([
      ['approved', 'guarded'],
      ['completed', 'guarded'],
      ['held', 'guarded'],
    ]);
    // The same tool called directly follows its own default: it runs, recorded without a set.
    const direct = await exec({ tool_name: 'add', args: { a: 2, b: 2 } });
    expect(direct).toMatchObject({ status: 'success', func_return: 4 });
    expect((await recordOf(nats, org, direct.execution_id)).execution.toolset).toBeNull();
  });

  it("follows each tool's default through a set with no policy, and a set's false runs a tool whose default holds it", async () => {
    const runs = await exec({ toolset: 'defaults', tool_name: 'add', args: { a: 5 } });
    expect(runs).toMatchObject({ status: 'success', func_return: 7 });
    expect((await recordOf(nats, org, runs.execution_id)).execution.toolset).toBe('defaults');
    expect(await exec({ toolset: 'defaults', tool_name: 'transfer', args: { amount: 1 } })).toMatchObject({
      status: 'pending_approval',
    });
    const relaxed = await exec({ toolset: 'relaxed', tool_id: tools.transfer.id, args: { amount: 2 } });
    expect(relaxed).toMatchObject({ status: 'success', func_return: 'sent 2' });
    expect((await recordOf(nats, org, relaxed.execution_id)).execution).toMatchObject({
      status: 'succeeded',
      toolset: 'relaxed',
      tool_name: 'transfer',
    });
    // An async call through the set: queued, run from the work queue, its outcome event names the set.
    const queued = await exec({ toolset: 'defaults', tool_name: 'add', args: { a: 6 }, mode: 'async' });
    expect(queued).toMatchObject({ status: 'queued' });
    const [completed] = await eventsFor(nats, testPrefix(), [queued.execution_id], ['completed']).then((evs) =>
      evs.filter((e) => e.kind === 'completed'),
    );
    expect(completed!.payload).toMatchObject({
      execution_id: queued.execution_id,
      toolset: 'defaults',
      status: 'succeeded',
    });
  });

  it('refuses a tool outside the set as TOOL_NOT_FOUND naming the set (the same for one the org does not have), and runs nothing', async () => {
    const outside = await exec({ toolset: 'guarded', tool_name: 'secret' });
    const byId = await exec({ toolset: 'guarded', tool_id: tools.secret.id });
    const missing = await exec({ toolset: 'guarded', tool_name: 'nowhere' });
    expect(outside.error).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      message: 'The tool set guarded has no tool secret',
      details: { toolset: 'guarded', tool: 'secret' },
    });
    expect(byId.error).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      details: { toolset: 'guarded', tool: tools.secret.id },
    });
    expect(missing.error).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      message: 'The tool set guarded has no tool nowhere',
    });
    expect(outside.error.details.execution_id).toBeUndefined();
    expect((await exec({ toolset: 'no-such-set', tool_name: 'add' })).error?.code).toBe('TOOLSET_NOT_FOUND');
    expect((await exec({ toolset: 'guarded', agent_id: 'agent-1', tool_name: 'add' })).error?.code).toBe(
      'CONTRACT_VIOLATION',
    );
    // Nothing of secret ran or was recorded (a run would be recorded just after it answered: read after a call that is).
    const marker = await exec({ tool_name: 'secret' });
    await recordOf(nats, org, marker.execution_id);
    expect(
      (await req('executions.list', { tool_id: tools.secret.id })).executions.map((e: any) => e.execution_id),
    ).toEqual([marker.execution_id]);
  });

  it('lists the executions made through one set only, newest first', async () => {
    await upsertSet({ name: 'listed', tool_names: ['add'], requires_approval: false });
    const ids: string[] = [];
    for (const a of [1, 2]) ids.push((await exec({ toolset: 'listed', tool_name: 'add', args: { a } })).execution_id);
    const other = (await exec({ toolset: 'defaults', tool_name: 'add', args: { a: 3 } })).execution_id;
    for (const id of [...ids, other]) await recordOf(nats, org, id);
    const listed = await req('executions.list', { toolset: 'listed' });
    expect(listed.executions.map((e: any) => e.execution_id)).toEqual([...ids].reverse());
    expect(listed.executions.every((e: any) => e.toolset === 'listed')).toBe(true);
    expect(
      (await req('executions.list', { toolset: 'listed', limit: 1 })).executions.map((e: any) => e.execution_id),
    ).toEqual([ids[1]]);
    expect(
      (await req('executions.list', { toolset: 'defaults' })).executions.map((e: any) => e.execution_id),
    ).toContain(other);
  });

  it('follows the set as it changes: a tool tagged later joins it, and a new policy applies', async () => {
    await req('tools.upsert', { tool: { source_code: pythonTool('tagged', 'return "tagged"') } });
    await upsertSet({ name: 'by-tag', tags: ['ops'], tool_names: ['add'], requires_approval: true });
    expect((await exec({ toolset: 'by-tag', tool_name: 'tagged' })).error?.code).toBe('TOOL_NOT_FOUND');
    await req('tools.upsert', { tool: { source_code: pythonTool('tagged', 'return "tagged"'), tags: ['ops'] } });
    await expectEventually(
      async () => expect((await exec({ toolset: 'by-tag', tool_name: 'tagged' })).status).toBe('pending_approval'),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    await upsertSet({ name: 'by-tag', tags: ['ops'], tool_names: ['add'], requires_approval: false });
    await expectEventually(
      async () =>
        expect(await exec({ toolset: 'by-tag', tool_name: 'tagged' })).toMatchObject({
          status: 'success',
          func_return: 'tagged',
        }),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });

  describe('through the MCP gateway', () => {
    const open = async (name: string, capabilities = {}) => {
      const c = await mcpClient(toolsetEndpoint(name), await nats.tokenFor(org), capabilities);
      clients.push(c.client);
      return c.client;
    };

    beforeAll(async () => {
      await upsertSet({
        name: 'mcp-guarded',
        description: 'Adding, carefully.',
        instructions: 'Ask before adding.',
        tool_names: ['add'],
        requires_approval: true,
      });
    });

    it("gives the set's description and instructions as the server's instructions; an unknown set is 404 at initialize", async () => {
      const client = await open('mcp-guarded');
      expect(client.getInstructions()).toBe('Adding, carefully.\n\nAsk before adding.');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['add']);
      const res = await fetch(toolsetEndpoint('no-such-set'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${await nats.tokenFor(org)}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
      expect(res.status).toBe(404);
    });

    it('asks approval by elicitation for a member the set holds, and runs it when accepted (recorded through the set)', async () => {
      const client = await open('mcp-guarded', { elicitation: {} });
      const asked: string[] = [];
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        return { action: 'accept', content: {} };
      });
      const r = await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(/add/);
      expect(r.isError).toBeFalsy();
      expect(r.content).toEqual([{ type: 'text', text: '42' }]);
      const id = (r._meta as Record<string, string>)['toolplane/execution_id'];
      expect((await recordOf(nats, org, id)).execution).toMatchObject({ status: 'succeeded', toolset: 'mcp-guarded' });
    });

    it('without elicitation, the held call is a tool error naming its execution, waiting for an approver', async () => {
      const client = await open('mcp-guarded');
      const r = await client.callTool({ name: 'add', arguments: { a: 1, b: 1 } });
      expect(r.isError).toBe(true);
      const id = (r._meta as Record<string, string>)['toolplane/execution_id'];
      expect(JSON.stringify(r.content)).toContain(id);
      expect((await recordOf(nats, org, id)).execution).toMatchObject({
        status: 'pending_approval',
        toolset: 'mcp-guarded',
      });
      expect(await req('executions.approve', { execution_id: id })).toMatchObject({
        status: 'success',
        func_return: 2,
      });
    });

    it('tells a connected session that its tool list changed when an upsert adds a tool to the set', async () => {
      await upsertSet({ name: 'mcp-growing', tool_names: ['add'] });
      const client = await open('mcp-growing');
      let changed = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changed += 1;
      });
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['add']);
      // The client's GET stream is open once the server can push to it: change the set until a notification arrives.
      await expectEventually(
        async () => {
          await upsertSet({ name: 'mcp-growing', tool_names: ['add', 'later'] });
          await upsertSet({ name: 'mcp-growing', tool_names: ['add'] });
          await upsertSet({ name: 'mcp-growing', tool_names: ['add', 'later'] });
          return changed > 0;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['add', 'later']);
    });
  });
});
