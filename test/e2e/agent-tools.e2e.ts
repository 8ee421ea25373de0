/**
 * Agent tool sets over the public API: attach / detach / list with per-agent settings, one org's
 * tools never attachable from another, and a tool that goes — deleted, or removed by an MCP
 * resync — leaves every agent it was attached to, with events and (for MCP) the sync report
 * saying so.
 */
import type { Subscription } from '@nats-io/transport-node';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool, ROLL_D20 } from '../support/tools';

describe('agent tool sets', () => {
  let client: RawClient;
  let sub: Subscription;
  const events: Array<{ subject: string; payload: any }> = [];
  const fakes: FakeMcpServer[] = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const upsert = async (org: string, source: string, extra: Record<string, unknown> = {}) =>
    ok(await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: source, ...extra } })).tool;
  const attach = (org: string, body: Record<string, unknown>) =>
    client.req('toolplane.v1.agents.tools.attach', { org_id: org, ...body });
  const list = async (org: string, agent: string, extra: Record<string, unknown> = {}) =>
    ok(await client.req('toolplane.v1.agents.tools.list', { org_id: org, agent_id: agent, ...extra }));
  const names = async (org: string, agent: string) =>
    (await list(org, agent, { limit: 200 })).tools.map((t: any) => t.tool.name);
  /** The agent-tools events of an org seen so far, polled until `pred` holds (or 15 s pass). */
  const eventsOf = (org: string, pred: (e: Array<{ subject: string; payload: any }>) => boolean) =>
    expectEventually(
      () => {
        const mine = events.filter((e) => e.payload.org_id === org);
        if (!pred(mine)) throw new Error(`the events so far do not match: ${JSON.stringify(mine)}`);
        return mine;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    sub = client.nc.subscribe(client.subject('toolplane.v1.events.agent-tools.*'), {
      callback: (_err, msg) =>
        void events.push({ subject: msg.subject.slice(testPrefix().length + 1), payload: msg.json() }),
    });
  });
  afterAll(async () => {
    sub?.unsubscribe();
    await Promise.all(fakes.map((f) => f.stop()));
    await client?.close();
  });

  it('attaches by ids and names, lists a page at a time in attachment order, detaches, with events', async () => {
    const org = uniqueOrg('agent-tools');
    const tools = [];
    for (let i = 0; i < 5; i++) tools.push(await upsert(org, pythonTool(`tool_${i}`, `return ${i}`)));
    const first = ok(await attach(org, { agent_id: 'agent-1', tool_ids: [tools[2].id, tools[0].id] }));
    expect(first.attached).toBe(2);
    expect(first.tools.map((t: any) => t.tool.name)).toEqual(['tool_2', 'tool_0']);
    expect(first.tools[0]).toMatchObject({
      requires_approval: false,
      requires_approval_override: null,
      attached_at: expect.any(String),
      tool: { id: tools[2].id },
    });
    const second = ok(await attach(org, { agent_id: 'agent-1', tool_names: ['tool_0', 'tool_4', 'tool_1'] }));
    expect(second.attached).toBe(2); // tool_0 was attached already

    const page1 = await list(org, 'agent-1', { limit: 2 });
    expect(page1.tools.map((t: any) => t.tool.name)).toEqual(['tool_2', 'tool_0']);
    const page2 = await list(org, 'agent-1', { limit: 2, cursor: page1.next_cursor });
    expect(page2).toEqual({
      tools: [
        expect.objectContaining({ tool: expect.objectContaining({ name: 'tool_4' }) }),
        expect.objectContaining({ tool: expect.objectContaining({ name: 'tool_1' }) }),
      ],
      next_cursor: null,
    });
    expect((await list(org, 'agent-2')).tools).toEqual([]); // another agent, nothing attached

    const detached = ok(
      await client.req('toolplane.v1.agents.tools.detach', {
        org_id: org,
        agent_id: 'agent-1',
        tool_names: ['tool_0', 'tool_3'],
      }),
    );
    expect(detached.detached).toEqual([{ tool_id: tools[0].id, name: 'tool_0' }]); // tool_3 was not attached
    expect(await names(org, 'agent-1')).toEqual(['tool_2', 'tool_4', 'tool_1']);

    const seen = await eventsOf(org, (e) => e.length >= 3);
    expect(
      seen.map((e) => [e.subject, e.payload.agent_id, e.payload.tools.map((t: any) => t.tool_name), e.payload.cause]),
    ).toEqual([
      ['toolplane.v1.events.agent-tools.attached', 'agent-1', ['tool_2', 'tool_0'], undefined],
      ['toolplane.v1.events.agent-tools.attached', 'agent-1', ['tool_4', 'tool_1'], undefined],
      ['toolplane.v1.events.agent-tools.detached', 'agent-1', ['tool_0'], 'request'],
    ]);
  });

  it("lets an agent's requires_approval override the tool's default, and null clear it", async () => {
    const org = uniqueOrg('approval');
    const guarded = await upsert(org, ADD, { default_requires_approval: true });
    const open = await upsert(org, ROLL_D20);
    ok(await attach(org, { agent_id: 'a', tool_ids: [guarded.id, open.id] }));
    const approval = async (agent: string) =>
      Object.fromEntries(
        (await list(org, agent)).tools.map((t: any) => [
          t.tool.name,
          [t.requires_approval, t.requires_approval_override],
        ]),
      );
    expect(await approval('a')).toEqual({ add: [true, null], roll_d20: [false, null] });
    // Per agent: b trusts add, c guards roll_d20; a keeps the defaults.
    ok(await attach(org, { agent_id: 'b', tool_ids: [guarded.id], requires_approval: false }));
    ok(await attach(org, { agent_id: 'c', tool_names: ['roll_d20'], requires_approval: true }));
    expect(await approval('b')).toEqual({ add: [false, false] });
    expect(await approval('c')).toEqual({ roll_d20: [true, true] });
    expect(await approval('a')).toEqual({ add: [true, null], roll_d20: [false, null] });
    // Attaching again without requires_approval leaves the override; null clears it.
    const again = ok(await attach(org, { agent_id: 'b', tool_ids: [guarded.id] }));
    expect(again).toMatchObject({
      attached: 0,
      tools: [{ requires_approval: false, requires_approval_override: false }],
    });
    ok(await attach(org, { agent_id: 'b', tool_ids: [guarded.id], requires_approval: null }));
    expect(await approval('b')).toEqual({ add: [true, null] });
    // The tool's default changes for every agent without an override.
    await upsert(org, ADD, { default_requires_approval: false });
    expect(await approval('a')).toEqual({ add: [false, null], roll_d20: [false, null] });
    const seen = await eventsOf(org, (e) => e.filter((x) => x.payload.agent_id === 'b').length >= 2);
    expect(
      seen.filter((x) => x.payload.agent_id === 'b').map((x) => x.payload.tools[0].requires_approval_override),
    ).toEqual([false, null]);
  });

  it("never attaches another org's tool, answering as for no tool at all; agent ids are per org", async () => {
    const a = uniqueOrg('att-a');
    const b = uniqueOrg('att-b');
    const mine = await upsert(a, ADD);
    const theirs = await upsert(b, ROLL_D20);
    const byId = await attach(a, { agent_id: 'shared-agent', tool_ids: [mine.id, theirs.id] });
    expect(byId.error).toMatchObject({ code: 'TOOL_NOT_FOUND', retryable: false, details: { tools: [theirs.id] } });
    const unknown = await attach(a, {
      agent_id: 'shared-agent',
      tool_ids: ['tool-00000000-0000-4000-8000-000000000000'],
    });
    expect(unknown.error.message.replace(/tool-[0-9a-f-]+/g, 'ID')).toBe(
      byId.error.message.replace(/tool-[0-9a-f-]+/g, 'ID'),
    );
    expect((await attach(a, { agent_id: 'shared-agent', tool_names: ['roll_d20'] })).error.code).toBe('TOOL_NOT_FOUND');
    expect(await names(a, 'shared-agent')).toEqual([]); // all or none: not even its own tool
    // The same agent id in b is b's agent: a's attachment is not there, and a cannot detach b's.
    ok(await attach(a, { agent_id: 'shared-agent', tool_ids: [mine.id] }));
    ok(await attach(b, { agent_id: 'shared-agent', tool_ids: [theirs.id] }));
    expect(await names(a, 'shared-agent')).toEqual(['add']);
    expect(await names(b, 'shared-agent')).toEqual(['roll_d20']);
    expect(
      ok(
        await client.req('toolplane.v1.agents.tools.detach', {
          org_id: a,
          agent_id: 'shared-agent',
          tool_ids: [theirs.id],
        }),
      ).detached,
    ).toEqual([]);
    expect(await names(b, 'shared-agent')).toEqual(['roll_d20']);
  });

  it('detaches a deleted tool from every agent, with a detached event per agent', async () => {
    const org = uniqueOrg('delete');
    const doomed = await upsert(org, ADD);
    const kept = await upsert(org, ROLL_D20);
    for (const agent of ['x', 'y']) ok(await attach(org, { agent_id: agent, tool_ids: [doomed.id, kept.id] }));
    ok(await client.req('toolplane.v1.tools.delete', { org_id: org, id: doomed.id }));
    expect([await names(org, 'x'), await names(org, 'y')]).toEqual([['roll_d20'], ['roll_d20']]);
    const seen = await eventsOf(org, (e) => e.filter((x) => x.payload.cause === 'tool_deleted').length >= 2);
    expect(
      seen
        .filter((e) => e.subject.endsWith('.detached'))
        .map((e) => [e.payload.agent_id, e.payload.tools, e.payload.cause])
        .sort(),
    ).toEqual([
      ['x', [{ tool_id: doomed.id, tool_name: 'add' }], 'tool_deleted'],
      ['y', [{ tool_id: doomed.id, tool_name: 'add' }], 'tool_deleted'],
    ]);
  });

  it('detaches a tool an MCP resync removes, and the sync report names the agents', async () => {
    const org = uniqueOrg('mcp-detach');
    const f = new FakeMcpServer();
    f.tools = [echoTool('stays'), echoTool('goes')];
    fakes.push(await f.start());
    ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'shifting', transport: 'streamable_http', url: f.url } },
        { timeoutMs: 30_000 },
      ),
    );
    ok(await attach(org, { agent_id: 'helper', tool_names: ['stays', 'goes'] }));
    ok(await attach(org, { agent_id: 'other', tool_names: ['goes'] }));
    const goes = (await list(org, 'other')).tools[0].tool;
    f.tools = [echoTool('stays')];
    const { sync } = ok(
      await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'shifting' }, { timeoutMs: 30_000 }),
    );
    expect(sync).toMatchObject({ removed: 1, detached: 2 });
    expect([...sync.detachments].sort((p: any, q: any) => p.agent_id.localeCompare(q.agent_id))).toEqual([
      { agent_id: 'helper', tool_id: goes.id, name: 'goes' },
      { agent_id: 'other', tool_id: goes.id, name: 'goes' },
    ]);
    expect([await names(org, 'helper'), await names(org, 'other')]).toEqual([['stays'], []]);
    const seen = await eventsOf(org, (e) => e.filter((x) => x.payload.cause === 'source_removed').length >= 2);
    expect(
      seen
        .filter((x) => x.payload.cause === 'source_removed')
        .map((x) => x.payload.agent_id)
        .sort(),
    ).toEqual(['helper', 'other']);
    // The report is kept on the server too.
    expect(
      ok(await client.req('toolplane.v1.mcp.servers.get', { org_id: org, name: 'shifting' })).server.last_sync.report,
    ).toMatchObject({ detached: 2 });
  });

  it('needs tools:write to change a set and tools:read to read one', async () => {
    const org = uniqueOrg('agent-scopes');
    const tool = await upsert(org, ADD);
    const reader = (await client.mint(org, { scopes: ['tools:read'] })).token;
    const refused = await client.req(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: 'a', tool_ids: [tool.id] },
      { token: reader },
    );
    expect(refused.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/tools:write/) });
    expect(
      (
        await client.req(
          'toolplane.v1.agents.tools.detach',
          { org_id: org, agent_id: 'a', tool_ids: [tool.id] },
          { token: reader },
        )
      ).error.code,
    ).toBe('FORBIDDEN');
    expect(
      ok(await client.req('toolplane.v1.agents.tools.list', { org_id: org, agent_id: 'a' }, { token: reader })).tools,
    ).toEqual([]);
    const executor = (await client.mint(org, { scopes: ['tools:execute'] })).token;
    const definitions = await client.req(
      'toolplane.v1.agents.tools.definitions',
      { org_id: org, agent_id: 'a', format: 'openai_chat' },
      { token: executor },
    );
    expect(definitions.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/tools:read/) });
  });
});
