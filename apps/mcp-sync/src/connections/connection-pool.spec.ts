import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { ConnectionPool, poolKey, type ServerTarget } from './connection-pool';
import { McpClientConnection } from './mcp-connection';
import type { OAuthClient } from './oauth-client';
import type { StdioPolicy } from './stdio-policy';

/** A connection that is never opened for real: which target (server, user, agent) it was made for. */
function fakeConnection(target: ServerTarget): McpClientConnection & { madeFor: string } {
  const c = Object.create(McpClientConnection.prototype) as McpClientConnection & { madeFor: string };
  Object.assign(c, {
    inFlight: 0,
    lastUsed: Date.now(),
    closed: false,
    madeFor: `${target.id}/${target.userId ?? '(org)'}${target.agentId ? `/${target.agentId}` : ''}`,
  });
  c.close = jest.fn(async () => {
    c.closed = true;
  });
  return c;
}

function target(over: Partial<ServerTarget> & { account?: 'org' | 'user'; templated?: boolean } = {}): ServerTarget {
  const { account, templated, ...rest } = over;
  return {
    id: 'mcp-00000000-0000-4000-8000-000000000001',
    orgId: 'org-1',
    name: 'srv',
    transport: 'streamable_http',
    command: null,
    args: [],
    url: 'https://mcp.example.test/mcp',
    version: 1,
    secrets: {
      ...(account ? { auth: { type: 'oauth' as const, account } } : {}),
      ...(templated ? { headers: { 'x-api-key': '{{API_KEY}}' } } : {}),
    },
    ...rest,
  };
}

describe('ConnectionPool: connections per end user', () => {
  let sut: ConnectionPool;
  let oauth: { forget: jest.Mock };
  let lookups: Array<{ userId?: string; agentId?: string } | undefined>;
  const made: Array<McpClientConnection & { madeFor: string }> = [];

  function poolWith(maxUserPools: number): ConnectionPool {
    const config = {
      TOOLPLANE_PROFILE: 'development',
      MCP_ALLOWED_HOSTS: [],
      MCP_IDLE_CLOSE_MS: 600_000,
      MCP_POOL_MAX_CONNECTIONS: 4,
      MCP_POOL_MAX_USER_POOLS: maxUserPools,
      MCP_RECONNECT_BASE_MS: 10,
      MCP_RECONNECT_MAX_MS: 10,
    };
    oauth = { forget: jest.fn() };
    lookups = [];
    const secrets = {
      lookup: async (_org: string, _names: string[], caller?: { userId?: string; agentId?: string }) => (
        lookups.push(caller), Object.fromEntries(_names.map((n) => [n, 'v']))
      ),
    };
    const pool = new ConnectionPool(config as never, secrets, oauth as unknown as OAuthClient, {} as StdioPolicy);
    const internals = pool as unknown as {
      open: (t: ServerTarget) => Promise<McpClientConnection>;
      resolve: (t: ServerTarget) => Promise<unknown>;
    };
    jest.spyOn(internals, 'open').mockImplementation(async (t: ServerTarget) => {
      await internals.resolve(t); // the templates, resolved as a real open does
      const c = fakeConnection(t);
      made.push(c);
      return c;
    });
    return pool;
  }
  const on = (t: ServerTarget) =>
    sut.withConnection(t, Date.now() + 5_000, async (c) => (c as McpClientConnection & { madeFor: string }).madeFor);

  beforeEach(() => {
    made.length = 0;
    sut = poolWith(2);
  });
  afterEach(() => sut.onModuleDestroy());

  it('gives each user of an account "user" server their own connection, reused by their next call, never the org’s', async () => {
    const server = target({ account: 'user' });
    expect(await on(sut.forCaller(server, 'alice'))).toBe(`${server.id}/alice`);
    expect(await on(sut.forCaller(server, 'bob'))).toBe(`${server.id}/bob`);
    expect(await on(sut.forCaller(server, 'alice'))).toBe(`${server.id}/alice`);
    expect(made.map((c) => c.madeFor)).toEqual([`${server.id}/alice`, `${server.id}/bob`]);
    expect(sut.liveConnections(server.id)).toBe(0);
    expect(sut.liveConnections(server.id, 'alice')).toBe(1);
  });

  it('refuses a call without a user on an account "user" server, and shares an org server’s connection across users', async () => {
    expect(() => sut.forCaller(target({ account: 'user' }), undefined)).toThrow(
      expect.objectContaining({ code: ErrorCode.MCP_AUTHORIZATION_REQUIRED, retryable: false }) as ToolplaneError,
    );
    const org = target({ account: 'org' });
    expect(sut.forCaller(org, 'alice')).toBe(org);
    expect(await on(sut.forCaller(org, 'alice'))).toBe(await on(sut.forCaller(org, 'bob')));
    expect(made).toHaveLength(1);
  });

  it('connects a server whose templates take secrets per user (the user’s values may differ)', async () => {
    const templated = target({ templated: true });
    expect(sut.forCaller(templated, 'alice').userId).toBe('alice');
    expect(sut.forCaller(templated, undefined)).toBe(templated);
    expect(await on(sut.forCaller(templated, 'alice'))).not.toBe(await on(sut.forCaller(templated, 'bob')));
  });

  it('keeps at most MCP_POOL_MAX_USER_POOLS user pools: the least recently used idle one is closed, a busy one never', async () => {
    const server = target({ account: 'user' });
    await on(sut.forCaller(server, 'u1'));
    await new Promise((r) => setTimeout(r, 5));
    // u2 is busy while u3 arrives: u1 (idle, least recently used) goes.
    let release!: () => void;
    const busy = sut.withConnection(
      sut.forCaller(server, 'u2'),
      Date.now() + 5_000,
      () => new Promise<void>((r) => (release = r)),
    );
    await new Promise((r) => setTimeout(r, 5));
    await on(sut.forCaller(server, 'u3'));
    expect(sut.userPools()).toBe(2);
    expect(made.find((c) => c.madeFor.endsWith('/u1'))!.close).toHaveBeenCalled();
    expect(made.find((c) => c.madeFor.endsWith('/u2'))!.close).not.toHaveBeenCalled();
    // Everything busy but one: the idle one goes, the busy one stays.
    await on(sut.forCaller(server, 'u4'));
    expect(made.find((c) => c.madeFor.endsWith('/u3'))!.close).toHaveBeenCalled();
    expect(made.find((c) => c.madeFor.endsWith('/u2'))!.close).not.toHaveBeenCalled();
    release();
    await busy;
    expect(sut.userPools()).toBe(2);
  });

  it('drops every user’s sessions with the server, or one user’s only', async () => {
    const server = target({ account: 'user' });
    await on(sut.forCaller(server, 'alice'));
    await on(sut.forCaller(server, 'bob'));
    await sut.dropUser(server.id, 'alice');
    expect(oauth.forget).toHaveBeenCalledWith(server.id, 'alice');
    expect(made.map((c) => c.closed)).toEqual([true, false]);
    await sut.drop(server.id);
    expect(made.map((c) => c.closed)).toEqual([true, true]);
    expect(sut.userPools()).toBe(0);
  });

  it('connects a templated server per (user, agent): another agent’s or another user’s call never takes that connection', async () => {
    const templated = target({ templated: true });
    const a = sut.forCaller(templated, 'alice', 'agent-a');
    expect(a).toMatchObject({ userId: 'alice', agentId: 'agent-a' });
    expect(sut.forCaller(templated, undefined, 'agent-a')).toMatchObject({ agentId: 'agent-a' });
    expect(sut.forCaller(templated, undefined, 'agent-a').userId).toBeUndefined();
    const seenBy = await Promise.all(
      [
        a,
        sut.forCaller(templated, 'alice', 'agent-b'),
        sut.forCaller(templated, 'bob', 'agent-a'),
        sut.forCaller(templated, undefined, 'agent-a'),
        templated,
      ].map(on),
    );
    expect(new Set(seenBy).size).toBe(5);
    expect(await on(sut.forCaller(templated, 'alice', 'agent-a'))).toBe(`${templated.id}/alice/agent-a`);
    expect(made).toHaveLength(5);
    // Each connect resolved its templates for its own caller (the org's pool: the org's values only).
    expect(lookups).toEqual([
      { userId: 'alice', agentId: 'agent-a' },
      { userId: 'alice', agentId: 'agent-b' },
      { userId: 'bob', agentId: 'agent-a' },
      { agentId: 'agent-a' },
      {},
    ]);
  });

  it('keys an account "user" server by user only when no template takes secrets: the agent changes no value there', async () => {
    const server = target({ account: 'user' });
    expect(sut.forCaller(server, 'alice', 'agent-a').agentId).toBeUndefined();
    expect(await on(sut.forCaller(server, 'alice', 'agent-a'))).toBe(
      await on(sut.forCaller(server, 'alice', 'agent-b')),
    );
    expect(made).toHaveLength(1);
  });

  it('drops a user’s pools of every agent with their sessions, and an agent’s pool forgets no user’s tokens when it goes', async () => {
    const server = target({ account: 'user', templated: true });
    await on(sut.forCaller(server, 'alice', 'agent-a'));
    await on(sut.forCaller(server, 'alice', 'agent-b'));
    await sut.dropUser(server.id, 'alice');
    expect(made.map((c) => c.closed)).toEqual([true, true]);
    expect(sut.userPools()).toBe(0);

    const templated = target({ templated: true });
    await on(sut.forCaller(templated, undefined, 'agent-a'));
    await on(sut.forCaller(templated, undefined, 'agent-b'));
    oauth.forget.mockClear();
    await on(sut.forCaller(templated, undefined, 'agent-c')); // the bound (2): agent-a's idle pool goes
    expect(made.find((c) => c.madeFor.endsWith('/(org)/agent-a'))!.closed).toBe(true);
    expect(oauth.forget).not.toHaveBeenCalled();
  });

  it('drops every pool of a deleted org’s servers (the org’s and every caller’s) with their cached tokens, and no other org’s', async () => {
    await sut.onModuleDestroy();
    sut = poolWith(10); // room for every pool here: none closed for the bound
    const server = target({ account: 'user', templated: true });
    const theirs = target({ id: 'mcp-00000000-0000-4000-8000-000000000002', orgId: 'org-2', templated: true });
    await on(sut.forCaller(server, 'alice', 'agent-a'));
    await on(sut.forCaller(server, 'bob'));
    await on(sut.forCaller(theirs, 'alice'));
    expect(await sut.dropOrg('org-1')).toBe(1);
    expect(made.map((c) => c.closed)).toEqual([true, true, false]);
    expect(oauth.forget).toHaveBeenCalledWith(server.id);
    expect(oauth.forget).not.toHaveBeenCalledWith(theirs.id);
    expect(await on(sut.forCaller(theirs, 'alice'))).toBe(`${theirs.id}/alice`);
    expect(made).toHaveLength(3);
  });
});

describe('poolKey', () => {
  const id = 'mcp-1';
  it('is the server id for the org, and one key per (server, user, agent) that no other caller shares', () => {
    expect(poolKey({ id })).toBe(id);
    const keys = [
      poolKey({ id, userId: 'u' }),
      poolKey({ id, agentId: 'u' }),
      poolKey({ id, userId: 'u', agentId: 'a' }),
      poolKey({ id, userId: 'u', agentId: 'b' }),
      poolKey({ id, userId: 'v', agentId: 'a' }),
      poolKey({ id, agentId: 'a' }),
      poolKey({ id: 'mcp-2', userId: 'u', agentId: 'a' }),
    ];
    expect(new Set([id, ...keys]).size).toBe(keys.length + 1);
    expect(poolKey({ id, userId: 'u', agentId: 'a' })).toBe(poolKey({ id, agentId: 'a', userId: 'u' }));
  });
});
