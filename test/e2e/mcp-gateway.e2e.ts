/**
 * The MCP gateway with the MCP SDK's own client over real HTTP: an agent's tools listed and called
 * through Toolplane (validation, sandbox, records), typed results, tool errors, and the edge —
 * tokens, sessions bound to them, another org's token.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Kvm } from '@nats-io/kv';
import { MCP_SESSIONS_BUCKET } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, gatewayUrl, mcpClient } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

describe('MCP gateway: an agent’s tools over Streamable HTTP', () => {
  let nats: RawClient;
  const clients: Client[] = [];
  const org = uniqueOrg('gw');
  const agent = 'agent-1';

  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const upsert = async (o: string, source: string, extra: Record<string, unknown> = {}) =>
    ok(await nats.req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code: source, ...extra } })).tool;
  const attach = async (o: string, a: string, names: string[]) =>
    ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: o, agent_id: a, tool_names: names }));
  const connect = async (url: string, token: string, caps = {}) => {
    const c = await mcpClient(url, token, caps);
    clients.push(c.client);
    return c.client;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    await upsert(org, ADD);
    await upsert(org, pythonTool('fails', 'raise ValueError("no good")'));
    await upsert(org, pythonTool('shape', 'return {"n": 1, "s": "x"}'));
    await attach(org, agent, ['add', 'fails', 'shape']);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await nats.close();
  });

  it('lists the agent’s attached tools with their input schemas', async () => {
    const client = await connect(agentEndpoint(agent), await nats.tokenFor(org));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'fails', 'shape']);
    const add = tools.find((t) => t.name === 'add')!;
    expect(add.inputSchema).toMatchObject({
      type: 'object',
      properties: { a: { type: 'integer' }, b: { type: 'integer' } },
      required: ['a'],
    });
    expect(client.getServerVersion()?.name).toBe('toolplane');
  });

  it('calls a tool through Toolplane: text and JSON results, a tool error as isError, each with its execution', async () => {
    const client = await connect(agentEndpoint(agent), await nats.tokenFor(org));
    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 5 } });
    expect(sum.isError).toBeFalsy();
    expect(sum.content).toEqual([{ type: 'text', text: '7' }]);
    const shape = await client.callTool({ name: 'shape', arguments: {} });
    expect(shape.structuredContent).toEqual({ n: 1, s: 'x' });
    const failed = await client.callTool({ name: 'fails', arguments: {} });
    expect(failed.isError).toBe(true);
    expect(JSON.stringify(failed.content)).toMatch(/no good/);
    const bad = await client.callTool({ name: 'add', arguments: { a: 'two' } });
    expect(bad.isError).toBe(true);
    const id = (sum._meta as Record<string, string>)['toolplane/execution_id'];
    const record = await expectEventually(
      async () => ok(await nats.req('toolplane.v1.executions.get', { org_id: org, execution_id: id })),
      { timeoutMs: 15_000 },
    );
    expect(record.execution).toMatchObject({ status: 'succeeded', agent_id: agent, tool_name: 'add' });
  });

  it('refuses an unknown tool as a JSON-RPC error', async () => {
    const client = await connect(agentEndpoint(agent), await nats.tokenFor(org));
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/Unknown tool: nope/);
  });

  it('refuses a request without a token (401 naming the resource metadata), and serves that metadata', async () => {
    const res = await fetch(agentEndpoint(agent), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer /);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`${gatewayUrl()}/.well-known/oauth-protected-resource/mcp/agents/${agent}`);
    const prm = await (await fetch(metadataUrl!)).json();
    expect(prm).toMatchObject({ resource: agentEndpoint(agent), bearer_methods_supported: ['header'] });
  });

  it('another org’s token lists nothing of this org and cannot use its session', async () => {
    const other = uniqueOrg('gw-b');
    const theirs = await connect(agentEndpoint(agent), await nats.tokenFor(other));
    expect((await theirs.listTools()).tools).toEqual([]);
    await expect(theirs.callTool({ name: 'add', arguments: { a: 1 } })).rejects.toThrow(/Unknown tool/);
    // A session id opened by org A's token, presented with org B's token: refused.
    const mine = await mcpClient(agentEndpoint(agent), await nats.tokenFor(org));
    clients.push(mine.client);
    const res = await fetch(agentEndpoint(agent), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${await nats.tokenFor(other)}`,
        'mcp-session-id': mine.transport.sessionId!,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(403);
  });

  it('forgets a session deleted from the bucket even when no broadcast told it (a replica that missed it reads the bucket again)', async () => {
    const { client, transport } = await mcpClient(agentEndpoint(agent), await nats.tokenFor(org));
    clients.push(client);
    expect((await client.listTools()).tools.length).toBe(3);
    const kv = await new Kvm(nats.nc).open(`${testPrefix()}_${MCP_SESSIONS_BUCKET}`);
    await kv.delete(transport.sessionId!);
    await expectEventually(
      async () => {
        const res = await fetch(agentEndpoint(agent), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${await nats.tokenFor(org)}`,
            'mcp-session-id': transport.sessionId!,
            'mcp-protocol-version': '2025-11-25',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
        });
        expect(res.status).toBe(404);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
  });
});
