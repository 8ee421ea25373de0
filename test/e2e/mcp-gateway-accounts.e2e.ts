/**
 * Connected accounts through the MCP gateway: an end user (an org token bound to that user) calls a
 * tool of an `account: "user"` MCP server before connecting their account. A client that takes
 * URL-mode elicitation is asked to open the authorization URL; once the person has authorized
 * (the authorization completes out of band, here by mcp.oauth.complete), the call runs — with
 * that user's token, as the MCP server saw it. A client without URL elicitation gets the URL in
 * the tool's error text.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { FakeMcpServer, type FakeTool } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { protect, startDiscoverableAuthServer, type DiscoverableAuthServer } from '../support/oauth-server';

describe('MCP gateway: an end user connects their account when a call needs it', () => {
  let nats: RawClient;
  let as: DiscoverableAuthServer;
  let f: FakeMcpServer;
  const clients: Client[] = [];
  const org = uniqueOrg('gw-acct');
  const agent = 'agent-acct';
  const seen: Array<{ user: string; authorization: string | undefined }> = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const req = (subject: string, body: unknown) => nats.req(subject, body, { timeoutMs: 30_000 });
  const ownerOf = (authorization: string | undefined) =>
    as.issued.get((authorization ?? '').replace(/^Bearer /, ''))?.user;
  /** The person: opens the URL, logs in as `login`; the redirect's code goes back through mcp.oauth.complete for `userId`. */
  const authorize = async (authorizationUrl: string, login: string, userId?: string) => {
    const url = new URL(authorizationUrl);
    url.searchParams.set('login', login);
    const back = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
    return req('toolplane.v1.mcp.oauth.complete', {
      org_id: org,
      state: back.searchParams.get('state'),
      code: back.searchParams.get('code'),
      ...(userId ? { user_id: userId } : {}),
    });
  };
  const whoami: FakeTool = {
    def: {
      name: 'whoami',
      description: 'Says who called',
      inputSchema: { type: 'object', properties: { user: { type: 'string' } }, required: ['user'] },
    },
    handler: async (args, extra) => {
      seen.push({ user: String(args.user), authorization: extra.authorization });
      return { content: [{ type: 'text', text: `hello ${String(args.user)}` }] };
    },
  };
  /** An MCP client for `user`, through an org token bound to that user. */
  const clientFor = async (user: string, capabilities = {}) => {
    const { token } = await nats.mint(org, { name: `bound-${user}`, user_id: user });
    const c = await mcpClient(agentEndpoint(agent), token, capabilities);
    clients.push(c.client);
    return c.client;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    as = await startDiscoverableAuthServer();
    f = new FakeMcpServer();
    f.tools = [whoami];
    await f.start();
    protect(f, as);
    const begun = ok(
      await req('toolplane.v1.mcp.servers.add', {
        org_id: org,
        server: {
          name: 'accounts',
          transport: 'streamable_http',
          url: f.url,
          auth: { type: 'oauth', account: 'user' },
        },
      }),
    );
    ok(await authorize(begun.authorization.authorization_url, 'operator'));
    ok(await req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: ['whoami'] }));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await f.stop();
    await as.stop();
    await nats.close();
  });

  it('asks a URL-elicitation client to open the authorization URL, then runs the call with that user’s own token', async () => {
    const client = await clientFor('carol', { elicitation: { url: {} } });
    const asked: Array<{ mode: string; url?: string; elicitationId?: string }> = [];
    const completed: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const p = request.params as { mode: string; url?: string; elicitationId?: string };
      asked.push(p);
      // The person opens the URL and logs in as carol; the authorization completes out of band.
      void authorize(p.url!, 'carol', 'carol');
      return { action: 'accept' };
    });
    client.setNotificationHandler(
      ElicitationCompleteNotificationSchema,
      (n) => void completed.push(n.params.elicitationId),
    );
    const r = await client.callTool({ name: 'whoami', arguments: { user: 'carol' } }, undefined, { timeout: 60_000 });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ mode: 'url' });
    expect(asked[0]!.url).toContain(`${as.issuer}/authorize`);
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: 'text', text: 'hello carol' }]);
    expect(completed).toEqual([asked[0]!.elicitationId]);
    const carol = seen.filter((s) => s.user === 'carol');
    expect(carol).toHaveLength(1);
    expect(ownerOf(carol[0]!.authorization)).toBe('carol');
    // Connected now: the next call runs at once, still with carol's token.
    expect((await client.callTool({ name: 'whoami', arguments: { user: 'carol' } })).content).toEqual([
      { type: 'text', text: 'hello carol' },
    ]);
    expect(asked).toHaveLength(1);
  });

  it('gives a client without URL elicitation the authorization URL in the tool error, for that user only', async () => {
    const client = await clientFor('dave');
    const r = await client.callTool({ name: 'whoami', arguments: { user: 'dave' } });
    expect(r.isError).toBe(true);
    const meta = r._meta as Record<string, string>;
    expect(meta['toolplane/error_code']).toBe('MCP_AUTHORIZATION_REQUIRED');
    expect(meta['toolplane/authorization_url']).toContain(`${as.issuer}/authorize`);
    expect(JSON.stringify(r.content)).toContain(meta['toolplane/authorization_url']!);
    expect(seen.filter((s) => s.user === 'dave')).toEqual([]);
    // Completing it connects dave alone: his next call runs with his token.
    ok(await authorize(meta['toolplane/authorization_url']!, 'dave', 'dave'));
    expect((await client.callTool({ name: 'whoami', arguments: { user: 'dave' } })).content).toEqual([
      { type: 'text', text: 'hello dave' },
    ]);
    expect(ownerOf(seen.filter((s) => s.user === 'dave').at(-1)!.authorization)).toBe('dave');
  });
});
