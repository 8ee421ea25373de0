import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { ConnectionPool, type ServerTarget } from './connection-pool';
import { McpConnection } from './mcp-connection';
import type { OAuthTokens } from './oauth-tokens';
import type { StdioPolicy } from './stdio-policy';

/** A connection that is never opened for real: which target (server, user) it was made for. */
function fakeConnection(target: ServerTarget): McpConnection & { madeFor: string } {
  const c = Object.create(McpConnection.prototype) as McpConnection & { madeFor: string };
  Object.assign(c, { inFlight: 0, lastUsed: Date.now(), closed: false, madeFor: `${target.id}/${target.userId ?? '(org)'}` });
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
  const made: Array<McpConnection & { madeFor: string }> = [];

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
    const pool = new ConnectionPool(config as never, { lookup: async () => ({}) }, oauth as unknown as OAuthTokens, {} as StdioPolicy);
    jest.spyOn(pool as unknown as { open: (t: ServerTarget) => Promise<McpConnection> }, 'open').mockImplementation(async (t: ServerTarget) => {
      const c = fakeConnection(t);
      made.push(c);
      return c;
    });
    return pool;
  }
  const on = (t: ServerTarget) => sut.withConnection(t, Date.now() + 5_000, async (c) => (c as McpConnection & { madeFor: string }).madeFor);

  beforeEach(() => {
    made.length = 0;
    sut = poolWith(2);
  });
  afterEach(() => sut.onModuleDestroy());

  it('gives each user of an account "user" server their own connection, reused by their next call, never the org’s', async () => {
    const server = target({ account: 'user' });
    expect(await on(sut.forUser(server, 'alice'))).toBe(`${server.id}/alice`);
    expect(await on(sut.forUser(server, 'bob'))).toBe(`${server.id}/bob`);
    expect(await on(sut.forUser(server, 'alice'))).toBe(`${server.id}/alice`);
    expect(made.map((c) => c.madeFor)).toEqual([`${server.id}/alice`, `${server.id}/bob`]);
    expect(sut.liveConnections(server.id)).toBe(0);
    expect(sut.liveConnections(server.id, 'alice')).toBe(1);
  });

  it('refuses a call without a user on an account "user" server, and shares an org server’s connection across users', async () => {
    expect(() => sut.forUser(target({ account: 'user' }), undefined)).toThrow(expect.objectContaining({ code: ErrorCode.MCP_AUTHORIZATION_REQUIRED, retryable: false }) as ToolplaneError);
    const org = target({ account: 'org' });
    expect(sut.forUser(org, 'alice')).toBe(org);
    expect(await on(sut.forUser(org, 'alice'))).toBe(await on(sut.forUser(org, 'bob')));
    expect(made).toHaveLength(1);
  });

  it('connects a server whose templates take secrets per user (the user’s values may differ)', async () => {
    const templated = target({ templated: true });
    expect(sut.forUser(templated, 'alice').userId).toBe('alice');
    expect(sut.forUser(templated, undefined)).toBe(templated);
    expect(await on(sut.forUser(templated, 'alice'))).not.toBe(await on(sut.forUser(templated, 'bob')));
  });

  it('keeps at most MCP_POOL_MAX_USER_POOLS user pools: the least recently used idle one is closed, a busy one never', async () => {
    const server = target({ account: 'user' });
    await on(sut.forUser(server, 'u1'));
    await new Promise((r) => setTimeout(r, 5));
    // u2 is busy while u3 arrives: u1 (idle, least recently used) goes.
    let release!: () => void;
    const busy = sut.withConnection(sut.forUser(server, 'u2'), Date.now() + 5_000, () => new Promise<void>((r) => (release = r)));
    await new Promise((r) => setTimeout(r, 5));
    await on(sut.forUser(server, 'u3'));
    expect(sut.userPools()).toBe(2);
    expect(made.find((c) => c.madeFor.endsWith('/u1'))!.close).toHaveBeenCalled();
    expect(made.find((c) => c.madeFor.endsWith('/u2'))!.close).not.toHaveBeenCalled();
    // Everything busy but one: the idle one goes, the busy one stays.
    await on(sut.forUser(server, 'u4'));
    expect(made.find((c) => c.madeFor.endsWith('/u3'))!.close).toHaveBeenCalled();
    expect(made.find((c) => c.madeFor.endsWith('/u2'))!.close).not.toHaveBeenCalled();
    release();
    await busy;
    expect(sut.userPools()).toBe(2);
  });

  it('drops every user’s sessions with the server, or one user’s only', async () => {
    const server = target({ account: 'user' });
    await on(sut.forUser(server, 'alice'));
    await on(sut.forUser(server, 'bob'));
    await sut.dropUser(server.id, 'alice');
    expect(oauth.forget).toHaveBeenCalledWith(server.id, 'alice');
    expect(made.map((c) => c.closed)).toEqual([true, false]);
    await sut.drop(server.id);
    expect(made.map((c) => c.closed)).toEqual([true, true]);
    expect(sut.userPools()).toBe(0);
  });
});
