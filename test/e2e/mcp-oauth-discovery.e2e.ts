import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { protect, startDiscoverableAuthServer, type DiscoverableAuthServer } from '../support/oauth-server';

/**
 * MCP OAuth beyond what the conformance suite covers: failures of discovery and registration,
 * metadata that changes between syncs, and tokens that never go to another resource. Each server
 * here is an OAuth-protected resource (401 + resource_metadata) of a discoverable authorization
 * server (RFC 8414 metadata, DCR) on loopback.
 */
describe('MCP OAuth discovery, registration and resource binding', () => {
  let client: RawClient;
  const stops: Array<() => Promise<void>> = [];
  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const req = (subject: string, body: unknown) => client.req(subject, body, { timeoutMs: 30_000 });
  const add = (org: string, server: Record<string, unknown>) =>
    req('toolplane.v1.mcp.servers.add', { org_id: org, server });

  async function authServer(opts: { expiresIn?: number } = {}): Promise<DiscoverableAuthServer> {
    const as = await startDiscoverableAuthServer(opts);
    stops.push(() => as.stop());
    return as;
  }

  async function protectedServer(as: DiscoverableAuthServer, authorizationServer?: string): Promise<FakeMcpServer> {
    const f = new FakeMcpServer();
    f.tools = [echoTool('guarded')];
    await f.start();
    protect(f, as, authorizationServer);
    stops.push(() => f.stop());
    return f;
  }

  /** The human: opens the URL, the authorization server redirects with the code, which goes back through mcp.oauth.complete. */
  async function authorize(org: string, authorizationUrl: string): Promise<any> {
    const res = await fetch(authorizationUrl, { redirect: 'manual' });
    const back = new URL(res.headers.get('location')!);
    return req('toolplane.v1.mcp.oauth.complete', {
      org_id: org,
      state: back.searchParams.get('state'),
      code: back.searchParams.get('code'),
    });
  }

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(async () => {
    await Promise.all(stops.map((s) => s()));
    await client.close();
  });

  it('connects from the URL alone: discovery, Dynamic Client Registration, PKCE, the resource in every request', async () => {
    const org = uniqueOrg('oauth-disc');
    const as = await authServer();
    const f = await protectedServer(as);
    const begun = ok(
      await add(org, { name: 'disc', transport: 'streamable_http', url: f.url, auth: { type: 'oauth' } }),
    );
    const url = new URL(begun.authorization.authorization_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${as.issuer}/authorize`);
    expect(url.searchParams.get('resource')).toBe(f.url);
    expect(url.searchParams.get('client_id')).toBe('client-1');
    expect(as.registrations).toHaveLength(1);
    const done = ok(await authorize(org, begun.authorization.authorization_url));
    expect(done.sync).toMatchObject({ added: 1, errors: [] });
    const exchange = as.tokenRequests.find((t) => t.form.grant_type === 'authorization_code')!;
    expect(exchange.form.resource).toBe(f.url);
    expect(exchange.authorization).toMatch(/^Basic /); // the registered client's secret, by the method the server lists first
    const call = await req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'guarded', args: { text: 'hi' } });
    expect(call).toMatchObject({ status: 'success', func_return: 'hi' });
    expect(f.observed.authorizations.every((h) => as.accepts(h, f.url))).toBe(true);
  });

  it('a registration endpoint that fails: a typed error naming it, and nothing stored', async () => {
    const org = uniqueOrg('oauth-regfail');
    const as = await authServer();
    as.failRegistration = 400;
    const f = await protectedServer(as);
    const r = await add(org, { name: 'regfail', transport: 'streamable_http', url: f.url, auth: { type: 'oauth' } });
    expect(r.error).toMatchObject({ code: 'MCP_OAUTH_FAILED', retryable: false });
    expect(r.error.message).toMatch(/invalid_client_metadata|registration/i);
    expect(as.registrations).toHaveLength(1);
    expect(as.tokenRequests).toHaveLength(0);
    expect(ok(await req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
    expect(f.observed.calls).toEqual([]);
  });

  it('metadata that points at a private address is refused before anything is sent there', async () => {
    const org = uniqueOrg('oauth-ssrf');
    const as = await authServer();
    // The resource metadata names an authorization server in a private range (not loopback: the development profile allows that).
    const f = await protectedServer(as, 'http://10.254.254.254/');
    const r = await add(org, { name: 'ssrf', transport: 'streamable_http', url: f.url, auth: { type: 'oauth' } });
    expect(r.error).toMatchObject({ code: 'MCP_URL_REFUSED' });
    expect(as.registrations).toHaveLength(0);
    expect(ok(await req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
  });

  it('a server whose authorization metadata changes between syncs: discovered again, the new token endpoint used', async () => {
    const org = uniqueOrg('oauth-moved');
    // Tokens that are stale at once: every sync asks the token endpoint again.
    const as = await authServer({ expiresIn: 1 });
    const f = await protectedServer(as);
    const auth = {
      type: 'oauth',
      grant_type: 'client_credentials',
      client_id: 'preregistered',
      client_secret: 'pre-secret',
    };
    ok(await add(org, { name: 'moved', transport: 'streamable_http', url: f.url, auth }));
    expect(as.tokenRequests.map((t) => t.path)).toEqual(['/token']);
    // The token endpoint moves; the old one is gone.
    as.tokenPaths = new Set(['/token2']);
    as.metadata.token_endpoint = `${as.issuer}/token2`;
    await new Promise((r) => setTimeout(r, 1100));
    const s = ok(await req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'moved' }));
    expect(s.server.last_sync).toMatchObject({ ok: true });
    const paths = as.tokenRequests.map((t) => t.path);
    expect(paths).toContain('/token2');
    expect(as.tokenRequests.filter((t) => t.path === '/token2').every((t) => t.form.resource === f.url)).toBe(true);
  });

  it("a token for one server's resource is never sent to another: a new URL gets its own token", async () => {
    const org = uniqueOrg('oauth-bound');
    const as = await authServer();
    const a = await protectedServer(as);
    const b = await protectedServer(as);
    const auth = {
      type: 'oauth',
      grant_type: 'client_credentials',
      client_id: 'preregistered',
      client_secret: 'pre-secret',
    };
    ok(await add(org, { name: 'bound', transport: 'streamable_http', url: a.url, auth }));
    const tokensForA = new Set(a.observed.authorizations);
    expect(tokensForA.size).toBeGreaterThan(0);
    const moved = ok(
      await req('toolplane.v1.mcp.servers.update', { org_id: org, name: 'bound', server: { url: b.url } }),
    );
    expect(moved.sync).toMatchObject({ errors: [] });
    expect(b.observed.authorizations.length).toBeGreaterThan(0);
    for (const h of b.observed.authorizations) expect(tokensForA.has(h)).toBe(false);
    expect(b.observed.authorizations.every((h) => as.accepts(h, b.url))).toBe(true);
    const grants = as.tokenRequests
      .filter((t) => t.form.grant_type === 'client_credentials')
      .map((t) => t.form.resource);
    expect(grants).toEqual([a.url, b.url]);
  });

  it('metadata naming another resource is refused before any authorization or token request', async () => {
    const org = uniqueOrg('oauth-mismatch');
    const as = await authServer();
    const f = await protectedServer(as);
    f.wellKnown['/.well-known/oauth-protected-resource/mcp'] = {
      resource: 'https://elsewhere.example/mcp',
      authorization_servers: [as.issuer],
    };
    const r = await add(org, {
      name: 'mismatch',
      transport: 'streamable_http',
      url: f.url,
      auth: {
        type: 'oauth',
        grant_type: 'client_credentials',
        client_id: 'preregistered',
        client_secret: 'pre-secret',
      },
    });
    expect(r.error).toMatchObject({ code: 'MCP_OAUTH_FAILED' });
    expect(r.error.message).toContain('elsewhere.example');
    expect(as.tokenRequests).toHaveLength(0);
  });

  it('a refused refresh: the server shows it needs authorization, calls answer with a fresh URL, and completing it restores the server', async () => {
    const org = uniqueOrg('oauth-reauth');
    const as = await authServer({ expiresIn: 1 });
    const f = await protectedServer(as);
    const begun = ok(
      await add(org, { name: 'reauth', transport: 'streamable_http', url: f.url, auth: { type: 'oauth' } }),
    );
    ok(await authorize(org, begun.authorization.authorization_url));
    as.failRefresh = true;
    await new Promise((r) => setTimeout(r, 1100));
    const refused = await req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'guarded',
      args: { text: 'again' },
    });
    expect(refused.error).toMatchObject({
      code: 'MCP_AUTHORIZATION_REQUIRED',
      retryable: false,
      details: { reason: 'reauthorize' },
    });
    expect(refused.error.details.authorization_url).toContain(`${as.issuer}/authorize`);
    expect(as.tokenRequests.some((t) => t.form.grant_type === 'refresh_token')).toBe(true);
    // Calls meanwhile get the same authorization (no new one, no new refresh attempt each time).
    const refreshes = as.tokenRequests.filter((t) => t.form.grant_type === 'refresh_token').length;
    const again = await req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'guarded',
      args: { text: 'again' },
    });
    expect(again.error).toMatchObject({
      code: 'MCP_AUTHORIZATION_REQUIRED',
      details: { authorization_url: refused.error.details.authorization_url },
    });
    expect(as.tokenRequests.filter((t) => t.form.grant_type === 'refresh_token')).toHaveLength(refreshes);
    const shown = ok(await req('toolplane.v1.mcp.servers.get', { org_id: org, name: 'reauth' }));
    expect(shown.server.pending_authorization).toMatchObject({
      reason: 'reauthorize',
      state: refused.error.details.state,
    });
    as.failRefresh = false;
    const done = ok(await authorize(org, refused.error.details.authorization_url));
    expect(done.server.pending_authorization).toBeNull();
    expect(done.sync).toMatchObject({ errors: [] });
    const call = await req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'guarded', args: { text: 'back' } });
    expect(call).toMatchObject({ status: 'success', func_return: 'back' });
  });
});
