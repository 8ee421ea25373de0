/**
 * The MCP gateway as a resource server for an enterprise IdP: a real OpenID Connect provider
 * (oidc-provider) issues JWT access tokens for an endpoint's resource URI (RFC 8707), a gateway
 * configured with that issuer (GATEWAY_OIDC_ISSUERS) takes them — the MCP SDK's client lists and
 * calls an agent's tools, the execution records the token's subject as its end user — and refuses
 * a token for another audience, an expired one, one of an issuer it does not trust, one without the
 * scope; sessions are bound to the issuer and subject, so a refreshed token keeps its session.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { startTestIdp, type TestIdp } from '../support/oidc-provider';
import { startApp, stopProcess, type RunningApp } from '../support/stack';
import { ADD } from '../support/tools';

describe('MCP gateway: JWT access tokens of a configured OIDC issuer', () => {
  const org = uniqueOrg('gw-oidc');
  const agent = 'agent-oidc';
  let nats: RawClient;
  let idp: TestIdp;
  let untrusted: TestIdp;
  let gateway: RunningApp;
  let base: string;
  const clients: Client[] = [];

  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const endpoint = () => agentEndpoint(agent, base);
  /** One JSON-RPC request to the endpoint with a bearer token (and a session, when given). */
  const post = (token: string, body: unknown, sessionId?: string) =>
    fetch(endpoint(), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2025-11-25',
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
      },
      body: JSON.stringify(body),
    });
  const initialize = (token: string) =>
    post(token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
  const challenge = (res: Response) => res.headers.get('www-authenticate') ?? '';

  beforeAll(async () => {
    // alice and bob: two end users (client_credentials: the client id is the token's sub) of one org.
    idp = await startTestIdp({ alice: org, bob: org }, ['mcp:tools', 'mcp:list']);
    untrusted = await startTestIdp({ alice: org }, ['mcp:tools']);
    const issuers = [
      {
        issuer: idp.issuer,
        org: { claim: 'org_id' },
        scope_map: { 'mcp:tools': ['tools:read', 'tools:execute'], 'mcp:list': ['tools:read'] },
      },
    ];
    gateway = await startApp('mcp-gateway', {
      prefix: testPrefix(),
      databaseUrl: testDatabaseUrl(),
      appEnv: { 'mcp-gateway': { GATEWAY_OIDC_ISSUERS: JSON.stringify(issuers) } },
    });
    base = `http://127.0.0.1:${gateway.httpPort}`;
    nats = await RawClient.connect(testPrefix());
    ok(await nats.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }));
    ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: ['add'] }));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await nats?.close();
    if (gateway) await stopProcess(gateway.proc);
    await idp?.stop();
    await untrusted?.stop();
  });

  it('a JWT for the endpoint’s resource lists and calls the agent’s tools, and the execution names its subject as the end user', async () => {
    const token = await idp.token('alice', endpoint(), 'mcp:tools');
    const { client } = await mcpClient(endpoint(), token);
    clients.push(client);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['add']);
    const sum = await client.callTool({ name: 'add', arguments: { a: 4, b: 5 } });
    expect(sum.content).toEqual([{ type: 'text', text: '9' }]);
    const id = (sum._meta as Record<string, string>)['toolplane/execution_id'];
    const record = await expectEventually(
      async () => ok(await nats.req('toolplane.v1.executions.get', { org_id: org, execution_id: id })),
      { timeoutMs: 15_000 },
    );
    expect(record.execution).toMatchObject({
      status: 'succeeded',
      agent_id: agent,
      tool_name: 'add',
      user_id: 'alice',
    });
    // The token's claims never reach the gateway's log.
    expect(gateway.output()).not.toContain(token.split('.')[1]);
  });

  it('refuses a JWT issued for another resource (401 invalid_token)', async () => {
    const res = await initialize(await idp.token('alice', agentEndpoint('another-agent', base), 'mcp:tools'));
    expect(res.status).toBe(401);
    expect(challenge(res)).toMatch(/^Bearer error="invalid_token"/);
    expect(challenge(res)).toMatch(/not issued for this resource/);
  });

  it('refuses an expired JWT signed by the issuer (401 invalid_token)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await idp.sign({
      sub: 'alice',
      aud: endpoint(),
      org_id: org,
      scope: 'mcp:tools',
      iat: now - 7200,
      exp: now - 3600,
    });
    const res = await initialize(expired);
    expect(res.status).toBe(401);
    expect(challenge(res)).toMatch(/error="invalid_token", error_description="The token has expired"/);
    // The same claims, unexpired: taken (the refusal above was the expiry, nothing else).
    const fresh = await initialize(
      await idp.sign({ sub: 'alice', aud: endpoint(), org_id: org, scope: 'mcp:tools', iat: now, exp: now + 300 }),
    );
    expect(fresh.status).toBe(200);
  });

  it('refuses a JWT of an issuer it was not configured with (401 invalid_token)', async () => {
    const res = await initialize(await untrusted.token('alice', endpoint(), 'mcp:tools'));
    expect(res.status).toBe(401);
    expect(challenge(res)).toMatch(/error="invalid_token"/);
  });

  it('refuses a JWT without the scope MCP endpoints need (403 insufficient_scope naming tools:execute)', async () => {
    const res = await initialize(await idp.token('alice', endpoint(), 'mcp:list'));
    expect(res.status).toBe(403);
    expect(challenge(res)).toMatch(/error="insufficient_scope"/);
    expect(challenge(res)).toMatch(/scope="tools:execute"/);
    expect(challenge(res)).toContain(
      `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/agents/${agent}"`,
    );
  });

  it('names the issuer among the authorization servers of the protected resource metadata', async () => {
    const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/agents/${agent}`)).json();
    expect(prm).toMatchObject({
      resource: endpoint(),
      authorization_servers: [idp.issuer],
      scopes_supported: ['tools:execute'],
    });
  });

  it('a session opened with one user’s JWT refuses another user’s, and keeps serving the same user’s refreshed token', async () => {
    const { client, transport } = await mcpClient(endpoint(), await idp.token('alice', endpoint(), 'mcp:tools'));
    clients.push(client);
    const sessionId = transport.sessionId!;
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const bob = await post(await idp.token('bob', endpoint(), 'mcp:tools'), list, sessionId);
    expect(bob.status).toBe(403);
    const refreshed = await idp.token('alice', endpoint(), 'mcp:tools');
    const again = await post(refreshed, list, sessionId);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('"name":"add"');
  });
});
