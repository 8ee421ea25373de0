import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { echoTool, everythingStdio, FakeMcpServer, startTokenServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';

/**
 * Periodic resync, reconnection and auth, on a second registry + mcp-sync pair (own subject
 * prefix, same database) configured with a short resync interval and stdio disabled.
 */
describe('MCP periodic resync, reconnect and auth', () => {
  let stack: Stack;
  let client: RawClient;
  const fakes: FakeMcpServer[] = [];
  const stops: Array<() => Promise<void>> = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const add = (org: string, server: Record<string, unknown>) =>
    client.req('toolplane.v1.mcp.servers.add', { org_id: org, server }, { timeoutMs: 30_000 });
  const get = async (org: string, name: string) =>
    ok(await client.req('toolplane.v1.mcp.servers.get', { org_id: org, name })).server;
  const names = async (org: string, server: string) =>
    ok(await client.req('toolplane.v1.tools.list', { org_id: org, tags: [`mcp:${server}`], limit: 200 }))
      .tools.map((t: any) => t.name)
      .sort();
  const until = <T>(fn: () => Promise<T>, pred: (v: T) => boolean, timeoutMs = 15_000): Promise<T> =>
    expectEventually(
      async () => {
        const v = await fn();
        if (!pred(v)) throw new Error(`still ${JSON.stringify(v)}`);
        return v;
      },
      { timeoutMs, intervalMs: 150 },
    );

  beforeAll(async () => {
    const prefix = `${testPrefix()}.resync`;
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['registry', 'credentials', 'mcp-sync'],
      appEnv: {
        'mcp-sync': {
          MCP_RESYNC_INTERVAL_MS: '1200',
          MCP_RESYNC_TICK_MS: '150',
          MCP_RESYNC_JITTER: '0.2',
          MCP_STDIO_ENABLED: 'false',
          MCP_RECONNECT_BASE_MS: '50',
          // Reconnection after an outage waits at most this long (the default 30 s cap outlives the waits below on a slow box).
          MCP_RECONNECT_MAX_MS: '1000',
          MCP_CONNECT_TIMEOUT_MS: '2000',
        },
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await Promise.all([...fakes.map((f) => f.stop()), ...stops.map((s) => s())]);
    await client.close();
    await stack.stop();
  });

  it('picks up upstream changes by periodic resync, without any notification', async () => {
    const org = uniqueOrg('periodic');
    const f = new FakeMcpServer();
    f.tools = [echoTool('one')];
    fakes.push(await f.start());
    ok(await add(org, { name: 'quiet', transport: 'streamable_http', url: f.url }));
    f.tools = [echoTool('one'), echoTool('two')];
    expect(
      await until(
        () => names(org, 'quiet'),
        (n) => n.length === 2,
      ),
    ).toEqual(['one', 'two']);
    // The registry shows the tools a moment before mcp-sync records the sync on the server; and a
    // later periodic round may already have found nothing new (added 0).
    const synced = await until(
      () => get(org, 'quiet'),
      (s) => s.last_sync?.trigger === 'periodic',
    );
    expect(synced.last_sync).toMatchObject({ trigger: 'periodic', ok: true, report: { removed: 0 } });
    expect(synced.tool_count).toBe(2);
  });

  it('records a failed resync without removing tools, and reconnects when the server is back', async () => {
    const org = uniqueOrg('reconnect');
    const f = new FakeMcpServer();
    f.tools = [echoTool('stay')];
    await f.start();
    const port = f.port;
    ok(await add(org, { name: 'flaky', transport: 'streamable_http', url: f.url }));
    await f.stop();
    const failed = await until(
      () => get(org, 'flaky'),
      (s) => s.last_sync?.ok === false,
    );
    expect(failed.last_sync).toMatchObject({ trigger: 'periodic', ok: false, error: expect.stringContaining('flaky') });
    expect(await names(org, 'flaky')).toEqual(['stay']);
    const back = new FakeMcpServer();
    back.tools = [echoTool('stay'), echoTool('new_one')];
    fakes.push(await back.start(port));
    expect(
      await until(
        () => names(org, 'flaky'),
        (n) => n.length === 2,
        30_000,
      ),
    ).toEqual(['new_one', 'stay']);
    // As above, the tools reach the registry a moment before the sync is recorded on the server.
    const recovered = await until(
      () => get(org, 'flaky'),
      (s) => s.last_sync?.ok === true,
    );
    expect(recovered.last_sync).toMatchObject({ trigger: 'periodic', ok: true, error: null, report: { removed: 0 } });
  });

  it('refuses stdio servers when MCP_STDIO_ENABLED is false', async () => {
    const r = await add(uniqueOrg('nostdio'), { name: 'local', transport: 'stdio', ...everythingStdio });
    expect(r.error).toMatchObject({ code: 'MCP_TRANSPORT_DISABLED', retryable: false });
  });

  it('sends a bearer token and never returns it; a wrong one fails to connect', async () => {
    const org = uniqueOrg('bearer');
    const f = new FakeMcpServer();
    f.tools = [echoTool('guarded')];
    f.requireAuthorization = 'Bearer right-token';
    fakes.push(await f.start());
    const wrong = await add(org, {
      name: 'guarded',
      transport: 'streamable_http',
      url: f.url,
      auth: { type: 'bearer', token: 'wrong-token' },
    });
    expect(wrong.error.code).toBe('MCP_CONNECTION_FAILED');
    const r = ok(
      await add(org, {
        name: 'guarded',
        transport: 'streamable_http',
        url: f.url,
        auth: { type: 'bearer', token: '{{MISSING_SECRET | right-token}}' },
      }),
    );
    expect(r.sync.added).toBe(1);
    expect(JSON.stringify(r)).not.toContain('right-token');
    const missing = await add(org, {
      name: 'nosecret',
      transport: 'streamable_http',
      url: f.url,
      headers: { 'X-Key': '{{NOT_A_SECRET}}' },
    });
    expect(missing.error.code).toBe('SECRET_NOT_FOUND');
  });

  it('gets an OAuth client-credentials token from the issuer and uses it', async () => {
    const org = uniqueOrg('oauth');
    const issuer = await startTokenServer('toolplane', 'client-secret', 'oauth-access-token');
    stops.push(issuer.stop);
    const f = new FakeMcpServer();
    f.tools = [echoTool('protected')];
    f.requireAuthorization = 'Bearer oauth-access-token';
    fakes.push(await f.start());
    const bad = await add(org, {
      name: 'oauth-bad',
      transport: 'streamable_http',
      url: f.url,
      auth: {
        type: 'oauth',
        grant_type: 'client_credentials',
        token_url: issuer.url,
        client_id: 'toolplane',
        client_secret: 'nope',
      },
    });
    expect(bad.error).toMatchObject({ code: 'MCP_OAUTH_FAILED' });
    expect(bad.error.message).toContain('invalid_client');
    const r = ok(
      await add(org, {
        name: 'oauth',
        transport: 'streamable_http',
        url: f.url,
        auth: {
          type: 'oauth',
          grant_type: 'client_credentials',
          token_url: issuer.url,
          client_id: 'toolplane',
          client_secret: 'client-secret',
        },
      }),
    );
    expect(r.server.auth_type).toBe('oauth');
    expect(r.sync.added).toBe(1);
    ok(await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'oauth' }));
    // The refused client is tried twice (the SDK's OAuth client retries invalid_client once, no more); then one token, reused for the resync.
    expect(issuer.requests()).toBe(3);
    // Kept by the credentials service, bound to the server and its issuer.
    const stored = ok(
      await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', {
        org_id: org,
        server_id: r.server.id,
        issuer: issuer.url,
      }),
    );
    expect(stored.tokens).toMatchObject({ access_token: 'oauth-access-token', refresh_token: null });
  });
});
