import type { Subscription } from '@nats-io/transport-node';
import { testPrefix, uniqueOrg } from '../support/context';
import { eventually } from '../support/executions';
import { FakeMcpServer, type FakeTool } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { protect, startDiscoverableAuthServer, type DiscoverableAuthServer } from '../support/oauth-server';

/**
 * Connected accounts: an `account: "user"` MCP server acts as each end user, with the user's own
 * OAuth tokens. The authorization server here issues tokens to whoever logs in at /authorize
 * (`login`), and the MCP server's tool records the bearer token each tools/call carried, so every
 * assertion about whose token went where is made on what the server saw.
 */
describe('MCP connected accounts (account: "user")', () => {
  let client: RawClient;
  let as: DiscoverableAuthServer;
  let f: FakeMcpServer;
  let events: Subscription;
  const seenEvents: Array<{ kind: string; payload: any }> = [];
  /** What the MCP server saw on each tools/call: the user the call said it was for, and the bearer it carried. */
  const seen: Array<{ user: string; authorization: string | undefined }> = [];

  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const req = (subject: string, body: unknown) => client.req(subject, body, { timeoutMs: 30_000 });
  const call = (org: string, user: string | undefined, tag = 'x') =>
    req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'whoami',
      args: { user: user ?? 'nobody', tag },
      ...(user ? { user_id: user } : {}),
    });
  /** Whose token the authorization server issued this bearer to. */
  const ownerOf = (authorization: string | undefined, by: DiscoverableAuthServer = as) =>
    by.issued.get((authorization ?? '').replace(/^Bearer /, ''))?.user;
  const eventsOf = (org: string, done: (evs: Array<{ kind: string; payload: any }>) => boolean) =>
    eventually(async () => seenEvents.filter((e) => e.payload.org_id === org), done, 30_000);

  const whoami: FakeTool = {
    def: {
      name: 'whoami',
      description: 'Says who called',
      inputSchema: {
        type: 'object',
        properties: { user: { type: 'string' }, tag: { type: 'string' } },
        required: ['user'],
      },
    },
    handler: async (args, extra) => {
      seen.push({ user: String(args.user), authorization: extra.authorization });
      return { content: [{ type: 'text', text: `hello ${String(args.user)}` }] };
    },
  };

  /** The person: opens the URL, logs in as `login`, and the code the redirect got goes back through mcp.oauth.complete. */
  async function authorize(org: string, authorizationUrl: string, login: string, userId?: string): Promise<any> {
    const url = new URL(authorizationUrl);
    url.searchParams.set('login', login);
    const res = await fetch(url, { redirect: 'manual' });
    const back = new URL(res.headers.get('location')!);
    return req('toolplane.v1.mcp.oauth.complete', {
      org_id: org,
      state: back.searchParams.get('state'),
      code: back.searchParams.get('code'),
      ...(userId ? { user_id: userId } : {}),
    });
  }

  /** An org with the server added (authorized by its operator, whose token lists the tools). */
  async function orgWithServer(label: string, server: FakeMcpServer = f): Promise<{ org: string; serverId: string }> {
    const org = uniqueOrg(label);
    const begun = ok(
      await req('toolplane.v1.mcp.servers.add', {
        org_id: org,
        server: {
          name: 'accounts',
          transport: 'streamable_http',
          url: server.url,
          auth: { type: 'oauth', account: 'user' },
        },
      }),
    );
    const done = ok(await authorize(org, begun.authorization.authorization_url, 'operator'));
    expect(done.sync).toMatchObject({ added: 1, errors: [] });
    expect(done.server).toMatchObject({ account: 'user', auth_type: 'oauth' });
    return { org, serverId: done.server.id };
  }

  /** The user's first call asks them to connect; they do. */
  async function connect(org: string, user: string): Promise<any> {
    const asked = await call(org, user);
    expect(asked.error).toMatchObject({ code: 'MCP_AUTHORIZATION_REQUIRED', retryable: false });
    return ok(await authorize(org, asked.error.details.authorization_url, user, user));
  }

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    as = await startDiscoverableAuthServer();
    f = new FakeMcpServer();
    f.tools = [whoami];
    await f.start();
    protect(f, as);
    events = client.nc.subscribe(client.subject('toolplane.v1.events.connection.>'));
    void (async () => {
      for await (const m of events) seenEvents.push({ kind: m.subject.split('.').pop()!, payload: m.json() });
    })();
  });
  afterAll(async () => {
    events.unsubscribe();
    await f.stop();
    await as.stop();
    await client.close();
  });

  it('each user connects their own account, and each call carries its own user’s token', async () => {
    const { org, serverId } = await orgWithServer('acct-two');

    const nobody = await call(org, undefined);
    expect(nobody.error).toMatchObject({
      code: 'MCP_AUTHORIZATION_REQUIRED',
      retryable: false,
      details: { server_id: serverId, server_name: 'accounts' },
    });
    expect(nobody.error.details.authorization_url).toBeUndefined();

    const askedAlice = await call(org, 'alice');
    expect(askedAlice.error).toMatchObject({
      code: 'MCP_AUTHORIZATION_REQUIRED',
      retryable: false,
      details: { server_id: serverId, server_name: 'accounts' },
    });
    const details = askedAlice.error.details;
    expect(details.authorization_url).toContain(`${as.issuer}/authorize`);
    expect(new URL(details.authorization_url).searchParams.get('state')).toBe(details.state);
    expect(Date.parse(details.expires_at)).toBeGreaterThan(Date.now());
    const askedBob = await call(org, 'bob');
    expect(askedBob.error.details.state).not.toBe(details.state);
    expect(seen.filter((s) => s.user === 'alice' || s.user === 'bob')).toEqual([]);

    // Bob cannot complete Alice's authorization (for himself or for her): nothing stored for Alice, her state still works.
    const stolen = await authorize(org, details.authorization_url, 'bob', 'bob');
    expect(stolen.error).toMatchObject({ code: 'MCP_OAUTH_FAILED' });
    expect(
      (await req('toolplane.v1.connections.get', { org_id: org, user_id: 'alice', server: 'accounts' })).error,
    ).toMatchObject({ code: 'CONNECTION_NOT_FOUND' });

    const connected = ok(await authorize(org, details.authorization_url, 'alice', 'alice'));
    expect(connected.connection).toMatchObject({
      server_id: serverId,
      server_name: 'accounts',
      user_id: 'alice',
      account: 'user',
    });

    expect(ok(await call(org, 'alice', 'a1'))).toMatchObject({ status: 'success', func_return: 'hello alice' });
    // Bob is still asked (the URL he was given), Alice's connection is hers only.
    const stillBob = await call(org, 'bob');
    expect(stillBob.error).toMatchObject({
      code: 'MCP_AUTHORIZATION_REQUIRED',
      details: { authorization_url: askedBob.error.details.authorization_url },
    });

    ok(await authorize(org, askedBob.error.details.authorization_url, 'bob', 'bob'));
    expect(ok(await call(org, 'bob', 'b1'))).toMatchObject({ status: 'success', func_return: 'hello bob' });
    expect(ok(await call(org, 'alice', 'a2'))).toMatchObject({ status: 'success' });

    const calls = seen.filter((s) => s.user === 'alice' || s.user === 'bob');
    expect(calls.map((s) => s.user)).toEqual(['alice', 'bob', 'alice']);
    for (const s of calls) expect(ownerOf(s.authorization)).toBe(s.user);

    // connections.*: the right rows to each, never a token.
    const all = ok(await req('toolplane.v1.connections.list', { org_id: org }));
    expect(all.connections.map((c: any) => `${c.account}:${c.user_id}`).sort()).toEqual([
      'org:null',
      'user:alice',
      'user:bob',
    ]);
    const alices = ok(await req('toolplane.v1.connections.list', { org_id: org, user_id: 'alice' }));
    expect(alices.connections).toHaveLength(1);
    expect(alices.connections[0]).toMatchObject({ user_id: 'alice', server_id: serverId, account: 'user' });
    expect(Object.keys(alices.connections[0]).sort()).toEqual([
      'account',
      'connected_at',
      'expires_at',
      'refreshed_at',
      'scopes',
      'server_id',
      'server_name',
      'user_id',
    ]);
    expect(
      ok(await req('toolplane.v1.connections.list', { org_id: uniqueOrg('acct-other'), user_id: 'alice' })).connections,
    ).toEqual([]);
    const replies = JSON.stringify([all, alices, connected]);
    for (const token of as.issued.keys()) expect(replies).not.toContain(token);
    expect(replies).not.toMatch(/rt-\d+/);

    // Revoked: deleted here, revoked at the authorization server, asked again; Bob unaffected.
    const revoked = ok(
      await req('toolplane.v1.connections.revoke', { org_id: org, user_id: 'alice', server: serverId }),
    );
    expect(revoked).toEqual({ revoked: true, upstream: 'revoked' });
    expect(as.revocations).toHaveLength(1);
    expect(as.revocations[0]!.form).toMatchObject({ token_type_hint: 'refresh_token' });
    expect(as.revocations[0]!.form.token).toMatch(/^rt-\d+$/);
    const again = await call(org, 'alice');
    expect(again.error).toMatchObject({ code: 'MCP_AUTHORIZATION_REQUIRED', details: { server_id: serverId } });
    expect(ok(await call(org, 'bob', 'b2'))).toMatchObject({ status: 'success', func_return: 'hello bob' });
    expect(
      ok(await req('toolplane.v1.connections.list', { org_id: org, server: 'accounts' }))
        .connections.map((c: any) => c.user_id)
        .sort(),
    ).toEqual(['bob', null]);

    // The events: authorized for each, revoked for Alice — ids and names, no token.
    const mine = await eventsOf(
      org,
      (evs) => evs.filter((e) => e.kind === 'authorized').length === 2 && evs.some((e) => e.kind === 'revoked'),
    );
    expect(
      mine
        .filter((e) => e.kind === 'authorized')
        .map((e) => e.payload.user_id)
        .sort(),
    ).toEqual(['alice', 'bob']);
    expect(mine.find((e) => e.kind === 'revoked')!.payload).toMatchObject({
      user_id: 'alice',
      server_id: serverId,
      server_name: 'accounts',
    });
    for (const e of mine)
      expect(Object.keys(e.payload).sort()).toEqual([
        'event_id',
        'occurred_at',
        'org_id',
        'server_id',
        'server_name',
        'user_id',
      ]);
  });

  it('two users’ calls interleaved at c=32 through one server: no call carries the other user’s token', async () => {
    const { org } = await orgWithServer('acct-race');
    await connect(org, 'carol');
    await connect(org, 'dave');
    const before = seen.length;
    const users = Array.from({ length: 128 }, (_, i) => (i % 2 ? 'dave' : 'carol'));
    const results: any[] = [];
    for (let i = 0; i < users.length; i += 32) {
      results.push(...(await Promise.all(users.slice(i, i + 32).map((u, j) => call(org, u, `r${i + j}`)))));
    }
    expect(results.filter((r) => r.status !== 'success')).toEqual([]);
    results.forEach((r, i) => expect(r.func_return).toBe(`hello ${users[i]}`));
    const raced = seen.slice(before).filter((s) => s.user === 'carol' || s.user === 'dave');
    expect(raced).toHaveLength(128);
    expect(raced.filter((s) => ownerOf(s.authorization) !== s.user)).toEqual([]);
  });

  it('refreshes a user’s tokens with that user’s grant, and asks that user alone when the refresh is refused', async () => {
    const shortAs = await startDiscoverableAuthServer({ expiresIn: 1 });
    const g = new FakeMcpServer();
    g.tools = [whoami];
    await g.start();
    protect(g, shortAs);
    try {
      const { org, serverId } = await orgWithServer('acct-refresh', g);
      await connect(org, 'erin');
      expect(ok(await call(org, 'erin', 'e1'))).toMatchObject({ status: 'success' });
      const first = seen.filter((s) => s.user === 'erin').at(-1)!.authorization;
      await new Promise((r) => setTimeout(r, 1100)); // erin's access token expires
      expect(ok(await call(org, 'erin', 'e2'))).toMatchObject({ status: 'success' });
      const second = seen.filter((s) => s.user === 'erin').at(-1)!.authorization;
      expect(second).not.toBe(first);
      expect(ownerOf(second, shortAs)).toBe('erin');
      expect(shortAs.tokenRequests.filter((t) => t.form.grant_type === 'refresh_token')).toHaveLength(1);

      shortAs.failRefresh = true;
      await new Promise((r) => setTimeout(r, 1100));
      const refused = await call(org, 'erin');
      expect(refused.error).toMatchObject({
        code: 'MCP_AUTHORIZATION_REQUIRED',
        details: { reason: 'reauthorize', server_id: serverId },
      });
      // The server is fine for everyone else: no pending authorization on it.
      expect(
        ok(await req('toolplane.v1.mcp.servers.get', { org_id: org, id: serverId })).server.pending_authorization,
      ).toBeNull();
      const evs = await eventsOf(
        org,
        (e) => e.some((x) => x.kind === 'refreshed') && e.some((x) => x.kind === 'expired'),
      );
      expect(
        evs
          .filter((e) => e.kind === 'refreshed' || e.kind === 'expired')
          .every((e) => e.payload.user_id === 'erin' && e.payload.server_id === serverId),
      ).toBe(true);
    } finally {
      await g.stop();
      await shortAs.stop();
    }
  });

  it('resolves header templates from the calling user’s secrets first, on a connection of their own', async () => {
    const org = uniqueOrg('acct-tmpl');
    const keys: Array<{ user: string; key: unknown }> = [];
    const h = new FakeMcpServer();
    h.tools = [
      {
        def: whoami.def,
        handler: async (args, extra) => (
          keys.push({ user: String(args.user), key: extra.headers?.['x-api-key'] }),
          { content: [{ type: 'text', text: 'ok' }] }
        ),
      },
    ];
    await h.start();
    try {
      ok(await req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'API_KEY', value: 'org-key' }));
      ok(
        await req('toolplane.v1.secrets.set', {
          org_id: org,
          scope: 'user',
          user_id: 'alice',
          key: 'API_KEY',
          value: 'alice-key',
        }),
      );
      ok(
        await req('toolplane.v1.mcp.servers.add', {
          org_id: org,
          server: { name: 'tmpl', transport: 'streamable_http', url: h.url, headers: { 'x-api-key': '{{API_KEY}}' } },
        }),
      );
      const users = Array.from({ length: 48 }, (_, i) => [undefined, 'alice', 'bob'][i % 3]);
      const results = await Promise.all(users.map((u, i) => call(org, u, `t${i}`)));
      expect(results.filter((r) => r.status !== 'success')).toEqual([]);
      expect(keys).toHaveLength(48);
      expect(keys.filter((k) => k.key !== (k.user === 'alice' ? 'alice-key' : 'org-key'))).toEqual([]);
    } finally {
      await h.stop();
    }
  });

  it('resolves header templates from the user’s secrets, then the agent’s, then the org’s, on a connection per (user, agent)', async () => {
    const org = uniqueOrg('acct-tmpl-agent');
    const keys: Array<{ tag: string; key: unknown }> = [];
    const h = new FakeMcpServer();
    h.tools = [
      {
        def: whoami.def,
        handler: async (args, extra) => (
          keys.push({ tag: String(args.tag), key: extra.headers?.['x-api-key'] }),
          { content: [{ type: 'text', text: 'ok' }] }
        ),
      },
    ];
    await h.start();
    const callAs = (user: string, agent: string, tag: string) =>
      req('toolplane.v1.tools.execute', {
        org_id: org,
        tool_name: 'whoami',
        args: { user, tag },
        user_id: user,
        agent_id: agent,
      });
    /** Whose value each (user, agent) must see: u's own, else agent-a's, else the org's. */
    const expected = (user: string, agent: string) =>
      user === 'u' ? 'u-key' : agent === 'agent-a' ? 'agent-a-key' : 'org-key';
    try {
      ok(await req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'API_KEY', value: 'org-key' }));
      ok(
        await req('toolplane.v1.secrets.set', {
          org_id: org,
          scope: 'agent',
          agent_id: 'agent-a',
          key: 'API_KEY',
          value: 'agent-a-key',
        }),
      );
      ok(
        await req('toolplane.v1.secrets.set', {
          org_id: org,
          scope: 'user',
          user_id: 'u',
          key: 'API_KEY',
          value: 'u-key',
        }),
      );
      ok(
        await req('toolplane.v1.mcp.servers.add', {
          org_id: org,
          server: { name: 'tmpl', transport: 'streamable_http', url: h.url, headers: { 'x-api-key': '{{API_KEY}}' } },
        }),
      );
      // The sync (tools/list for the org) used the org's value.
      expect(h.observed.headers['x-api-key']).toBe('org-key');

      const combos: Array<[string, string]> = [
        ['u', 'agent-a'],
        ['v', 'agent-a'],
        ['v', 'agent-b'],
      ];
      for (const [user, agent] of combos)
        expect(ok(await callAs(user, agent, `one-${user}-${agent}`))).toMatchObject({ status: 'success' });
      expect(keys.map((k) => k.key)).toEqual(['u-key', 'agent-a-key', 'org-key']);

      // 24 calls of the three callers at once, every connection warm: each sees its own value.
      const runs = Array.from({ length: 24 }, (_, i) => combos[i % 3]!);
      const results = await Promise.all(runs.map(([user, agent], i) => callAs(user, agent, `c${i}`)));
      expect(results.filter((r) => r.status !== 'success')).toEqual([]);
      const raced = keys.filter((k) => k.tag.startsWith('c'));
      expect(raced).toHaveLength(24);
      expect(raced.filter((k) => k.key !== expected(...runs[Number(k.tag.slice(1))]!))).toEqual([]);
    } finally {
      await h.stop();
    }
  });
});
