/**
 * MCP sessions that no gateway replica holds: two gateways behind a round-robin proxy (no sticky
 * sessions) serve one session's requests in turn — list, call, an approval asked through
 * elicitation whose answer reaches the other replica, list_changed after an attach — and the
 * session outlives the replica that opened it (SIGKILLed). A session deleted is gone (404) and the
 * client initializes again cleanly.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { RoundRobinProxy } from '../support/round-robin-proxy';
import { startApp, stopProcess, type RunningApp } from '../support/stack';
import { ADD, pythonTool } from '../support/tools';

describe('MCP gateway: sessions across replicas', () => {
  let nats: RawClient;
  let gateways: RunningApp[] = [];
  let proxy: RoundRobinProxy;
  let base: string;
  const clients: Client[] = [];
  const org = uniqueOrg('gw-rr');
  const agent = 'agent-rr';
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    const opts = { prefix: testPrefix(), databaseUrl: testDatabaseUrl() };
    gateways = await Promise.all([startApp('mcp-gateway', opts), startApp('mcp-gateway', opts)]);
    proxy = new RoundRobinProxy(gateways.map((g) => g.httpPort!));
    base = await proxy.start();
    ok(await nats.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }));
    ok(
      await nats.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: {
          source_code: pythonTool('transfer', 'return f"sent {amount}"', 'amount: int'),
          default_requires_approval: true,
        },
      }),
    );
    ok(
      await nats.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: { source_code: pythonTool('later', 'return "later"') },
      }),
    );
    ok(
      await nats.req('toolplane.v1.agents.tools.attach', {
        org_id: org,
        agent_id: agent,
        tool_names: ['add', 'transfer'],
      }),
    );
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await proxy?.stop();
    await Promise.all(gateways.map((g) => stopProcess(g.proc)));
    await nats.close();
  });

  it('serves one session from both replicas, asks approval by elicitation across them, and outlives the replica that opened it', async () => {
    const token = await nats.tokenFor(org);
    const asked: string[] = [];
    const { client } = await mcpClient(agentEndpoint(agent, base), token, { elicitation: {} });
    clients.push(client);
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: {} };
    });
    for (let i = 0; i < 4; i++)
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['add', 'transfer']);
    expect(proxy.hits.every((n) => n > 0)).toBe(true);
    // The call is held for approval on one replica; the client's answer is a new POST, on the other one.
    const sent = await client.callTool({ name: 'transfer', arguments: { amount: 5 } });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/transfer/);
    expect(sent.isError).toBeFalsy();
    expect(sent.content).toEqual([{ type: 'text', text: 'sent 5' }]);
    // The replica that took the initialize goes away; the session goes on on the other.
    await stopProcess(gateways[0]!.proc, 'SIGKILL');
    for (let i = 0; i < 3; i++)
      expect((await client.callTool({ name: 'add', arguments: { a: i, b: 1 } })).content).toEqual([
        { type: 'text', text: String(i + 1) },
      ]);
  });

  it('declining the approval denies the execution with the reason, as a tool error the model sees', async () => {
    const { client } = await mcpClient(agentEndpoint(agent, base), await nats.tokenFor(org), { elicitation: {} });
    clients.push(client);
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: 'decline',
      content: { reason: 'not today' },
    }));
    const r = await client.callTool({ name: 'transfer', arguments: { amount: 9 } });
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toMatch(/denied.*not today/);
    const id = (r._meta as Record<string, string>)['toolplane/execution_id'];
    expect(ok(await nats.req('toolplane.v1.executions.get', { org_id: org, execution_id: id })).execution.status).toBe(
      'denied',
    );
  });

  it('without elicitation, a held call is a tool error naming its execution, which an approver can run', async () => {
    const { client } = await mcpClient(agentEndpoint(agent, base), await nats.tokenFor(org));
    clients.push(client);
    const r = await client.callTool({ name: 'transfer', arguments: { amount: 3 } });
    expect(r.isError).toBe(true);
    const id = (r._meta as Record<string, string>)['toolplane/execution_id'];
    expect(JSON.stringify(r.content)).toContain(id);
    const approved = ok(await nats.req('toolplane.v1.executions.approve', { org_id: org, execution_id: id }));
    expect(approved.func_return).toBe('sent 3');
  });

  it('tells a connected session that its tool list changed when a tool is attached', async () => {
    const { client } = await mcpClient(agentEndpoint(agent, base), await nats.tokenFor(org));
    clients.push(client);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('later');
    // The client's GET stream is open once the server can push to it: attach until a notification arrives.
    await expectEventually(
      async () => {
        ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: ['later'] }));
        ok(await nats.req('toolplane.v1.agents.tools.detach', { org_id: org, agent_id: agent, tool_names: ['later'] }));
        ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: ['later'] }));
        return changed > 0;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('later');
  });

  it('a deleted session answers 404, and the client initializes a new one', async () => {
    const { client, transport } = await mcpClient(agentEndpoint(agent, base), await nats.tokenFor(org));
    clients.push(client);
    const old = transport.sessionId!;
    await transport.terminateSession();
    const res = await fetch(agentEndpoint(agent, base), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${await nats.tokenFor(org)}`,
        'mcp-session-id': old,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(404);
    const again = await mcpClient(agentEndpoint(agent, base), await nats.tokenFor(org));
    clients.push(again.client);
    expect(again.transport.sessionId).not.toBe(old);
    expect((await again.client.listTools()).tools.length).toBeGreaterThan(0);
  });
});
