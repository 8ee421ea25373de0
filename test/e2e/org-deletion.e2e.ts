/**
 * Deleting an org (`auth.orgs.delete`, a platform operator's) stops every call with its users'
 * credentials: its tokens — the org-wide one and one bound to an end user — are refused over NATS
 * and at the MCP gateway within the auth refresh interval, and the credentials stored for it (its
 * secrets of every scope, its MCP servers' OAuth tokens of the org and of each user) are deleted
 * with it, so even a call that needs no token (an executor's, as for an async execution queued
 * before) finds no token and no secret of its user — and mcp-sync's sessions made with them (a
 * user's connection, a template filled with a user's secret) serve no call after. Judged by what the
 * fake MCP servers saw.
 */
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint } from '../support/gateway';
import { FakeMcpServer, type FakeTool, type ToolHandler } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { protect, startDiscoverableAuthServer, type DiscoverableAuthServer } from '../support/oauth-server';

describe("deleting an org stops every call with its users' credentials", () => {
  let client: RawClient;
  let as: DiscoverableAuthServer;
  const accounts = new FakeMcpServer();
  const keyed = new FakeMcpServer();
  /** What the account "user" server saw on each tools/call: the bearer it carried. */
  const seenTokens: string[] = [];
  /** What the templated server saw on each tools/call: its x-api-key header. */
  const seenKeys: unknown[] = [];
  const org = uniqueOrg('orgdel');

  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const req = (subject: string, body: Record<string, unknown>, token?: string) =>
    client.req(subject, { org_id: org, ...body }, { timeoutMs: 30_000, ...(token ? { token } : {}) });
  /** As the executor sends it (sealed, no token): the call of an MCP tool for an end user. */
  const mcpCall = (t: any, user: string) =>
    client.req(
      'toolplane.internal.v1.mcp-tools.call',
      {
        org_id: org,
        tool_id: t.id,
        mcp: t.metadata_.mcp,
        args: {},
        user_id: user,
        timeout_ms: 10_000,
        max_timeout_ms: 10_000,
      },
      { timeoutMs: 30_000 },
    );
  /** As mcp-sync asks credentials (sealed): the org's stored OAuth token records, and alice's API_KEY. */
  const stored = async () => ({
    records: ok(await client.req('toolplane.internal.v1.mcp-oauth-tokens.list', { org_id: org })).records.map(
      (r: any) => r.user_id ?? null,
    ),
    secrets: ok(
      await client.req('toolplane.internal.v1.org-secrets.resolve', {
        org_id: org,
        names: ['API_KEY'],
        user_id: 'alice',
      }),
    ).values,
  });
  const run = (tool: string, body: Record<string, unknown>, token?: string) =>
    req('toolplane.v1.tools.execute', { tool_name: tool, args: {}, ...body }, token);
  /** The gateway's answer to an initialize with this token: its HTTP status. */
  const gatewayStatus = async (token: string): Promise<number> => {
    const res = await fetch(agentEndpoint('orgdel-agent'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'orgdel', version: '1' } },
      }),
    });
    await res.text();
    return res.status;
  };
  const ownerOf = (authorization: string | undefined) =>
    as.issued.get((authorization ?? '').replace(/^Bearer /, ''))?.user;

  const tool = (name: string, record: (extra: Parameters<ToolHandler>[1]) => void): FakeTool => ({
    def: { name, description: 'Records its call', inputSchema: { type: 'object', properties: {} } },
    handler: async (_args, extra) => (record(extra), { content: [{ type: 'text', text: 'ok' }] }),
  });

  /** The person: opens the URL, logs in as `login`, and the code goes back through mcp.oauth.complete. */
  async function authorize(authorizationUrl: string, login: string, userId?: string): Promise<any> {
    const url = new URL(authorizationUrl);
    url.searchParams.set('login', login);
    const back = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
    return req('toolplane.v1.mcp.oauth.complete', {
      state: back.searchParams.get('state'),
      code: back.searchParams.get('code'),
      ...(userId ? { user_id: userId } : {}),
    });
  }

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    as = await startDiscoverableAuthServer();
    accounts.tools = [tool('whoami', (extra) => seenTokens.push(extra.authorization ?? ''))];
    keyed.tools = [tool('keyed', (extra) => seenKeys.push(extra.headers?.['x-api-key']))];
    await accounts.start();
    await keyed.start();
    protect(accounts, as);

    // An account "user" server (authorized by the operator for the sync), and alice's own connection to it.
    const begun = ok(
      await req('toolplane.v1.mcp.servers.add', {
        server: {
          name: 'accounts',
          transport: 'streamable_http',
          url: accounts.url,
          auth: { type: 'oauth', account: 'user' },
        },
      }),
    );
    ok(await authorize(begun.authorization.authorization_url, 'operator'));
    const asked = await run('whoami', { user_id: 'alice' });
    expect(asked.error).toMatchObject({ code: 'MCP_AUTHORIZATION_REQUIRED' });
    ok(await authorize(asked.error.details.authorization_url, 'alice', 'alice'));
    // A server whose header takes alice's secret (the org's for others).
    ok(await req('toolplane.v1.secrets.set', { scope: 'sandbox', key: 'API_KEY', value: 'org-key' }));
    ok(await req('toolplane.v1.secrets.set', { scope: 'user', user_id: 'alice', key: 'API_KEY', value: 'alice-key' }));
    ok(
      await req('toolplane.v1.mcp.servers.add', {
        server: {
          name: 'keyed',
          transport: 'streamable_http',
          url: keyed.url,
          headers: { 'x-api-key': '{{API_KEY}}' },
        },
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await accounts.stop();
    await keyed.stop();
    await as.stop();
    await client?.close();
  });

  it("refuses its tokens over NATS and at the gateway, deletes its users' stored credentials, and no session made with them serves a call", async () => {
    const orgWide = await client.tokenFor(org);
    const bound = await client.mint(org, { name: 'alice’s agent', user_id: 'alice' });
    const whoamiTool = ok(await req('toolplane.v1.tools.get', { name: 'whoami' })).tool;
    const keyedTool = ok(await req('toolplane.v1.tools.get', { name: 'keyed' })).tool;

    // Before: both tokens work on both edges; alice's calls carry her token and her secret (sessions now live in mcp-sync).
    expect(ok(await run('whoami', {}, bound.token))).toMatchObject({ status: 'success' });
    expect(ok(await run('keyed', {}, bound.token))).toMatchObject({ status: 'success' });
    expect(ok(await run('whoami', { user_id: 'alice' }, orgWide))).toMatchObject({ status: 'success' });
    expect(ok(await mcpCall(whoamiTool, 'alice'))).toMatchObject({ status: 'success' });
    expect(ok(await mcpCall(keyedTool, 'alice'))).toMatchObject({ status: 'success' });
    expect(seenTokens.map(ownerOf)).toEqual(['alice', 'alice', 'alice']);
    expect(seenKeys).toEqual(['alice-key', 'alice-key']);
    expect([await gatewayStatus(orgWide), await gatewayStatus(bound.token)]).toEqual([200, 200]);
    const before = await stored();
    expect(before.records.sort()).toEqual(['alice', null]);
    expect(before.secrets).toEqual({ API_KEY: 'alice-key' });

    // A platform operator's (auth.* subjects go with the operator token).
    expect(await req('toolplane.v1.auth.orgs.delete', {})).toEqual({ deleted: true, tokens_revoked: 2 });

    // Its stored credentials went with it, before the answer: no OAuth token of the org or of a user, no secret of any scope.
    expect(await stored()).toEqual({ records: [], secrets: {} });

    // Both tokens refused everywhere within the refresh interval.
    await expectEventually(
      async () => {
        const codes = await Promise.all(
          [orgWide, bound.token].map(async (t) => (await run('whoami', {}, t)).error?.code),
        );
        expect(codes).toEqual(['UNAUTHENTICATED', 'UNAUTHENTICATED']);
        expect([await gatewayStatus(orgWide), await gatewayStatus(bound.token)]).toEqual([401, 401]);
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect((await req('toolplane.v1.executions.list', {}, bound.token)).error?.code).toBe('UNAUTHENTICATED');

    // A call as alice that needs no token (the executor's) finds neither her OAuth token nor her secret,
    // and no session made with them: nothing reached either server.
    expect((await mcpCall(whoamiTool, 'alice')).error).toMatchObject({ code: 'MCP_AUTHORIZATION_REQUIRED' });
    expect((await mcpCall(keyedTool, 'alice')).error).toMatchObject({ code: 'SECRET_NOT_FOUND' });
    expect(seenTokens).toHaveLength(3);
    expect(seenKeys).toEqual(['alice-key', 'alice-key']);
  });
});
