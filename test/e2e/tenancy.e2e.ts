/**
 * Two orgs, two adversaries, real identities: org A's token can neither read, change, run nor
 * delete anything of org B — tools, secrets, webhooks, sandbox configs, MCP servers, tokens —
 * whether it names org B (FORBIDDEN) or names itself and points at B's ids and names (not found),
 * nor attach B's tools to an agent or read B's agents (agent ids are per org).
 * B's things are unchanged afterwards.
 */
import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';

describe('tenancy with real identities', () => {
  let client: RawClient;
  const a = uniqueOrg('ten-a');
  const b = uniqueOrg('ten-b');
  let tokenA: string;
  let tokenB: string;
  let adminA: string;
  const mcp = new FakeMcpServer();
  const ids: { tool?: string; server?: string; token?: string; execution?: string; held?: string } = {};
  const asA = (subject: string, body: Record<string, unknown>) => client.req(subject, body, { token: tokenA });
  const asAdminA = (subject: string, body: Record<string, unknown>) => client.req(subject, body, { token: adminA });
  const asB = (subject: string, body: Record<string, unknown>) => client.req(subject, body, { token: tokenB });
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    tokenA = await client.tokenFor(a);
    tokenB = await client.tokenFor(b);
    adminA = (await client.mint(a, { scopes: ['admin', 'tools:read'] })).token;
    mcp.tools = [echoTool('b_echo')];
    await mcp.start();
    ids.tool = ok(
      await asB('toolplane.v1.tools.upsert', {
        org_id: b,
        tool: { source_code: pythonTool('b_secret_tool', 'import os\nreturn os.environ.get("B_KEY")') },
      }),
    ).tool.id;
    ok(
      await asB('toolplane.v1.secrets.set', { org_id: b, scope: 'sandbox', key: 'B_KEY', value: 'b-secret-value-123' }),
    );
    ok(
      await asB('toolplane.v1.webhooks.set', {
        org_id: b,
        url: 'http://127.0.0.1:9/b-hook',
        signing_secret: 'whsec-b-0123456789abcdef',
        fail_mode: 'open',
      }),
    );
    ok(await asB('toolplane.v1.sandbox-configs.upsert', { org_id: b, provider: 'local', config: { memory_mb: 256 } }));
    ids.server = ok(
      await asB('toolplane.v1.mcp.servers.add', {
        org_id: b,
        server: { name: 'b-server', transport: 'streamable_http', url: mcp.url },
      }),
    ).server.id;
    ids.token = (await client.mint(b, { name: 'b token' })).token_id;
    ok(await asB('toolplane.v1.agents.tools.attach', { org_id: b, agent_id: 'b-agent', tool_ids: [ids.tool] }));
    ids.execution = ok(
      await asB('toolplane.v1.tools.execute', { org_id: b, tool_id: ids.tool, args: {}, idempotency_key: 'b-run' }),
    ).execution_id;
    const ask = { name: 'b_ask', description: 'Ask B.', parameters: { type: 'object', properties: {} } };
    ok(
      await asB('toolplane.v1.tools.upsert', {
        org_id: b,
        tool: { tool_type: 'client', json_schema: ask, default_requires_approval: true },
      }),
    );
    ids.held = ok(await asB('toolplane.v1.tools.execute', { org_id: b, tool_name: 'b_ask', args: {} })).execution_id;
  });
  afterAll(async () => {
    await client?.close();
    await mcp.stop();
  });

  it('refuses every read, change, run and delete that names org B, with FORBIDDEN', async () => {
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['toolplane.v1.tools.get', { org_id: b, id: ids.tool }],
      ['toolplane.v1.tools.list', { org_id: b }],
      [
        'toolplane.v1.tools.upsert',
        { org_id: b, tool: { source_code: pythonTool('b_secret_tool', 'return "owned"') } },
      ],
      ['toolplane.v1.tools.delete', { org_id: b, id: ids.tool }],
      ['toolplane.v1.tools.execute', { org_id: b, tool_id: ids.tool, args: {} }],
      [
        'toolplane.v1.agents.tools.attach',
        { org_id: b, agent_id: 'b-agent', tool_ids: [ids.tool], requires_approval: false },
      ],
      ['toolplane.v1.agents.tools.detach', { org_id: b, agent_id: 'b-agent', tool_ids: [ids.tool] }],
      ['toolplane.v1.agents.tools.list', { org_id: b, agent_id: 'b-agent' }],
      ['toolplane.v1.agents.tools.definitions', { org_id: b, agent_id: 'b-agent', format: 'openai_chat' }],
      ['toolplane.v1.tools.execute-batch', { org_id: b, calls: [{ call_id: 'x', tool_id: ids.tool, args: {} }] }],
      ['toolplane.v1.tools.environment', { org_id: b, tool_id: ids.tool, prepare: true }],
      ['toolplane.v1.executions.get', { org_id: b, execution_id: ids.execution }],
      ['toolplane.v1.executions.list', { org_id: b }],
      ['toolplane.v1.executions.approve', { org_id: b, execution_id: ids.held }],
      ['toolplane.v1.executions.deny', { org_id: b, execution_id: ids.held, reason: 'no' }],
      [
        'toolplane.v1.executions.submit-result',
        { org_id: b, execution_id: ids.held, status: 'success', func_return: 'forged' },
      ],
      ['toolplane.v1.secrets.list', { org_id: b }],
      ['toolplane.v1.secrets.set', { org_id: b, scope: 'sandbox', key: 'B_KEY', value: 'overwritten' }],
      ['toolplane.v1.secrets.delete', { org_id: b, scope: 'sandbox', key: 'B_KEY' }],
      ['toolplane.v1.webhooks.get', { org_id: b }],
      [
        'toolplane.v1.webhooks.set',
        { org_id: b, url: 'http://127.0.0.1:9/evil', signing_secret: 'whsec-evil-0123456789abcdef' },
      ],
      ['toolplane.v1.webhooks.delete', { org_id: b }],
      ['toolplane.v1.sandbox-configs.get', { org_id: b, provider: 'local' }],
      ['toolplane.v1.sandbox-configs.upsert', { org_id: b, provider: 'local', config: { memory_mb: 16 } }],
      ['toolplane.v1.mcp.servers.get', { org_id: b, id: ids.server }],
      ['toolplane.v1.mcp.servers.list', { org_id: b }],
      ['toolplane.v1.mcp.servers.update', { org_id: b, id: ids.server, server: { url: 'http://127.0.0.1:9/evil' } }],
      ['toolplane.v1.mcp.servers.sync', { org_id: b, id: ids.server }],
      ['toolplane.v1.mcp.servers.remove', { org_id: b, id: ids.server }],
    ];
    for (const [subject, body] of attempts)
      expect([subject, (await asA(subject, body)).error?.code]).toEqual([subject, 'FORBIDDEN']);
    for (const [subject, body] of [
      ['toolplane.v1.auth.tokens.list', { org_id: b }],
      ['toolplane.v1.auth.tokens.create', { org_id: b, name: 'x' }],
      ['toolplane.v1.auth.tokens.revoke', { org_id: b, token_id: ids.token }],
    ] as const) {
      expect([subject, (await asAdminA(subject, body)).error?.code]).toEqual([subject, 'FORBIDDEN']);
    }
  });

  it("finds nothing of org B's by id or name from inside org A", async () => {
    expect((await asA('toolplane.v1.tools.get', { org_id: a, id: ids.tool })).error.code).toBe('TOOL_NOT_FOUND');
    expect((await asA('toolplane.v1.tools.delete', { org_id: a, id: ids.tool })).error.code).toBe('TOOL_NOT_FOUND');
    expect((await asA('toolplane.v1.tools.execute', { org_id: a, tool_id: ids.tool, args: {} })).error.code).toBe(
      'TOOL_NOT_FOUND',
    );
    expect(
      (await asA('toolplane.v1.tools.execute', { org_id: a, tool_name: 'b_echo', args: { text: 'x' } })).error.code,
    ).toBe('TOOL_NOT_FOUND');
    const batch = await asA('toolplane.v1.tools.execute-batch', {
      org_id: a,
      calls: [{ call_id: 'x', tool_id: ids.tool, args: {} }],
    });
    expect(batch.results[0].error.code).toBe('TOOL_NOT_FOUND');
    expect((await asA('toolplane.v1.tools.environment', { org_id: a, tool_id: ids.tool })).error.code).toBe(
      'TOOL_NOT_FOUND',
    );
    expect((await asA('toolplane.v1.tools.list', { org_id: a })).tools).toEqual([]);
    // B's executions: not found from inside A (get, approve, deny, submit a result), none listed.
    expect((await asA('toolplane.v1.executions.get', { org_id: a, execution_id: ids.execution })).error.code).toBe(
      'EXECUTION_NOT_FOUND',
    );
    // A's list holds A's own records only (the refused batch call above is one of them, once written).
    const listed = (await asA('toolplane.v1.executions.list', { org_id: a })).executions;
    expect(listed.filter((e: { org_id: string }) => e.org_id !== a)).toEqual([]);
    expect(listed.map((e: { execution_id: string }) => e.execution_id)).not.toEqual(
      expect.arrayContaining([ids.execution]),
    );
    expect(listed.map((e: { execution_id: string }) => e.execution_id)).not.toEqual(expect.arrayContaining([ids.held]));
    expect((await asA('toolplane.v1.executions.approve', { org_id: a, execution_id: ids.held })).error.code).toBe(
      'EXECUTION_NOT_FOUND',
    );
    expect(
      (await asA('toolplane.v1.executions.deny', { org_id: a, execution_id: ids.held, reason: 'no' })).error.code,
    ).toBe('EXECUTION_NOT_FOUND');
    expect(
      (
        await asA('toolplane.v1.executions.submit-result', {
          org_id: a,
          execution_id: ids.held,
          status: 'success',
          func_return: 'forged',
        })
      ).error.code,
    ).toBe('EXECUTION_NOT_FOUND');
    // Nor may A reuse B's idempotency key to read B's outcome: keys are per org.
    expect(
      (await asA('toolplane.v1.tools.execute', { org_id: a, tool_id: ids.tool, args: {}, idempotency_key: 'b-run' }))
        .error.code,
    ).toBe('TOOL_NOT_FOUND');
    // Agent ids are per org: A's 'b-agent' is A's own (empty) agent, and B's tool cannot join it.
    expect(
      (await asA('toolplane.v1.agents.tools.attach', { org_id: a, agent_id: 'b-agent', tool_ids: [ids.tool] })).error
        .code,
    ).toBe('TOOL_NOT_FOUND');
    expect(
      (await asA('toolplane.v1.agents.tools.attach', { org_id: a, agent_id: 'b-agent', tool_names: ['b_secret_tool'] }))
        .error.code,
    ).toBe('TOOL_NOT_FOUND');
    expect(
      (await asA('toolplane.v1.agents.tools.detach', { org_id: a, agent_id: 'b-agent', tool_ids: [ids.tool] }))
        .detached,
    ).toEqual([]);
    expect((await asA('toolplane.v1.agents.tools.list', { org_id: a, agent_id: 'b-agent' })).tools).toEqual([]);
    expect(
      await asA('toolplane.v1.agents.tools.definitions', { org_id: a, agent_id: 'b-agent', format: 'openai_chat' }),
    ).toMatchObject({ definitions: [], excluded: [] });
    expect((await asA('toolplane.v1.secrets.list', { org_id: a })).secrets).toEqual([]);
    expect((await asA('toolplane.v1.webhooks.get', { org_id: a })).error.code).toBe('WEBHOOK_NOT_FOUND');
    expect((await asA('toolplane.v1.sandbox-configs.list', { org_id: a })).sandbox_configs).toEqual([]);
    for (const s of ['get', 'sync', 'remove'] as const)
      expect((await asA(`toolplane.v1.mcp.servers.${s}`, { org_id: a, id: ids.server })).error.code).toBe(
        'MCP_SERVER_NOT_FOUND',
      );
    expect(
      (
        await asA('toolplane.v1.mcp.servers.update', {
          org_id: a,
          name: 'b-server',
          server: { url: 'http://127.0.0.1:9/evil' },
        })
      ).error.code,
    ).toBe('MCP_SERVER_NOT_FOUND');
    expect((await asAdminA('toolplane.v1.auth.tokens.revoke', { org_id: a, token_id: ids.token })).error.code).toBe(
      'TOKEN_NOT_FOUND',
    );
    expect(
      (await asAdminA('toolplane.v1.auth.tokens.list', { org_id: a })).tokens.map((t: any) => t.token_id),
    ).not.toContain(ids.token);
  });

  it("leaves org B's things exactly as B made them", async () => {
    expect(ok(await asB('toolplane.v1.tools.get', { org_id: b, id: ids.tool })).tool.name).toBe('b_secret_tool');
    expect(ok(await asB('toolplane.v1.executions.get', { org_id: b, execution_id: ids.held })).execution.status).toBe(
      'pending_approval',
    );
    expect(
      ok(await asB('toolplane.v1.agents.tools.list', { org_id: b, agent_id: 'b-agent' })).tools.map((t: any) => [
        t.tool.id,
        t.requires_approval_override,
      ]),
    ).toEqual([[ids.tool, null]]);
    expect(
      ok(
        await asB('toolplane.v1.agents.tools.definitions', { org_id: b, agent_id: 'b-agent', format: 'json_schema' }),
      ).definitions.map((d: any) => d.name),
    ).toEqual(['b_secret_tool']);
    const run = ok(await asB('toolplane.v1.tools.execute', { org_id: b, tool_id: ids.tool, args: {} }));
    expect(run).toMatchObject({ status: 'success', func_return: '***' }); // its own secret, masked in its own output
    expect(ok(await asB('toolplane.v1.secrets.list', { org_id: b })).secrets.map((s: any) => s.key)).toEqual(['B_KEY']);
    expect(ok(await asB('toolplane.v1.webhooks.get', { org_id: b })).webhook.url).toBe('http://127.0.0.1:9/b-hook');
    expect(
      ok(await asB('toolplane.v1.sandbox-configs.get', { org_id: b, provider: 'local' })).sandbox_config.config,
    ).toEqual({ memory_mb: 256 });
    expect(ok(await asB('toolplane.v1.mcp.servers.get', { org_id: b, id: ids.server })).server.url).toBe(mcp.url);
    expect(
      ok(await asB('toolplane.v1.tools.execute', { org_id: b, tool_name: 'b_echo', args: { text: 'still mine' } }))
        .func_return,
    ).toBe('still mine');
    const tokens = ok(await client.req('toolplane.v1.auth.tokens.list', { org_id: b }));
    expect(tokens.tokens.find((t: any) => t.token_id === ids.token).revoked_at).toBeNull();
  });
});
