import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer, sleep, startAuthorizationServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';

/** MCP server credentials: `{{VAR}}` templates resolved from the org's secrets (credentials service). */
describe('MCP server templates and tokens', () => {
  let client: RawClient;
  const fakes: FakeMcpServer[] = [];
  const stops: Array<() => Promise<void>> = [];
  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const add = (org: string, server: Record<string, unknown>) =>
    client.req('toolplane.v1.mcp.servers.add', { org_id: org, server }, { timeoutMs: 30_000 });
  const setSecret = (org: string, key: string, value: string, extra: Record<string, unknown> = {}) =>
    client.req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key, value, ...extra }).then(ok);
  const fake = async (setup: (f: FakeMcpServer) => void) => {
    const f = new FakeMcpServer();
    setup(f);
    fakes.push(await f.start());
    return f;
  };

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(async () => {
    await Promise.all([...fakes.map((f) => f.stop()), ...stops.map((s) => s())]);
    await client.close();
  });

  it("resolves {{VAR}} and {{VAR | default}} in headers and the bearer token from the org's secrets", async () => {
    const org = uniqueOrg('mcp-tpl');
    await setSecret(org, 'MCP_API_KEY', 'key-from-secret-1');
    await setSecret(org, 'MCP_TOKEN', 'tok-from-secret-2');
    const f = await fake((s) => {
      s.tools = [echoTool('templated')];
      s.requireAuthorization = 'Bearer tok-from-secret-2';
    });
    const r = ok(
      await add(org, {
        name: 'tpl',
        transport: 'streamable_http',
        url: f.url,
        headers: { 'X-Api-Key': 'k={{ MCP_API_KEY }}', 'X-Region': '{{REGION | eu-west}}' },
        auth: { type: 'bearer', token: '{{MCP_TOKEN}}' },
      }),
    );
    expect(r.sync).toMatchObject({ added: 1, errors: [] });
    expect(f.observed.headers).toMatchObject({
      'x-api-key': 'k=key-from-secret-1',
      'x-region': 'eu-west',
      authorization: 'Bearer tok-from-secret-2',
    });
    expect(JSON.stringify(r)).not.toMatch(/from-secret/);
    const call = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'templated', args: { text: 'hi' } },
      { timeoutMs: 30_000 },
    );
    expect(call).toMatchObject({ status: 'success', func_return: 'hi' });
  });

  it('refuses a template with neither a secret nor a default, and never reads another org or an agent secret', async () => {
    const org = uniqueOrg('mcp-tpl-miss');
    const other = uniqueOrg('mcp-tpl-other');
    await setSecret(other, 'OTHER_ORG_KEY', 'other-org-value');
    await setSecret(org, 'AGENT_ONLY', 'agent-value', { scope: 'agent', agent_id: 'agent-1' });
    const f = await fake((s) => (s.tools = [echoTool('never')]));
    const missing = await add(org, {
      name: 'miss',
      transport: 'streamable_http',
      url: f.url,
      headers: { 'X-Key': '{{NOT_SET}}' },
    });
    expect(missing.error).toMatchObject({
      code: 'SECRET_NOT_FOUND',
      retryable: false,
      details: { names: ['NOT_SET'] },
    });
    const crossOrg = await add(org, {
      name: 'cross',
      transport: 'streamable_http',
      url: f.url,
      headers: { 'X-Key': '{{OTHER_ORG_KEY}}' },
    });
    expect(crossOrg.error).toMatchObject({ code: 'SECRET_NOT_FOUND', details: { names: ['OTHER_ORG_KEY'] } });
    const agent = await add(org, {
      name: 'agent',
      transport: 'streamable_http',
      url: f.url,
      auth: { type: 'bearer', token: '{{AGENT_ONLY}}' },
    });
    expect(agent.error).toMatchObject({ code: 'SECRET_NOT_FOUND', details: { names: ['AGENT_ONLY'] } });
    expect(JSON.stringify([missing, crossOrg, agent])).not.toMatch(/other-org-value|agent-value/);
    expect(f.observed.sessions).toBe(0);
    expect(ok(await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
  });

  it('OAuth authorization code + PKCE: URL returned, code exchanged on completion, tokens stored encrypted and refreshed before expiry', async () => {
    const org = uniqueOrg('mcp-oauth-code');
    const as = await startAuthorizationServer('tp-public', 2);
    stops.push(as.stop);
    const f = await fake((s) => {
      s.tools = [echoTool('guarded_echo')];
      s.acceptAuthorization = as.accepts;
    });
    const redirectUri = 'http://127.0.0.1:9/callback';
    const auth = {
      type: 'oauth',
      grant_type: 'authorization_code',
      authorization_url: as.authorizeUrl,
      token_url: as.tokenUrl,
      client_id: 'tp-public',
      redirect_uri: redirectUri,
      scope: 'tools',
    };
    const begun = ok(await add(org, { name: 'oauth-code', transport: 'streamable_http', url: f.url, auth }));
    expect(begun.server).toBeUndefined();
    const authUrl = new URL(begun.authorization.authorization_url);
    expect(Object.fromEntries(authUrl.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'tp-public',
      redirect_uri: redirectUri,
      state: begun.authorization.state,
      code_challenge_method: 'S256',
      scope: 'tools',
    });
    expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(f.observed.sessions).toBe(0);
    expect(ok(await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);

    // The user authorizes; the redirect carries the code and the state back.
    const redirect = await fetch(authUrl, { redirect: 'manual' });
    const back = new URL(redirect.headers.get('location')!);
    expect(back.searchParams.get('state')).toBe(begun.authorization.state);
    const code = back.searchParams.get('code')!;
    const complete = (state: string, orgId = org) =>
      client.req('toolplane.v1.mcp.oauth.complete', { org_id: orgId, state, code }, { timeoutMs: 30_000 });
    expect((await complete(begun.authorization.state, uniqueOrg('thief'))).error.code).toBe('MCP_OAUTH_FAILED');
    const done = ok(await complete(begun.authorization.state));
    expect(done.server).toMatchObject({ name: 'oauth-code', auth_type: 'oauth', tool_count: 1 });
    expect(done.sync).toMatchObject({ added: 1, errors: [] });
    expect(JSON.stringify(done)).not.toMatch(/at-1|rt-1/);
    expect(as.grants).toEqual(['authorization_code']);
    expect((await complete(begun.authorization.state)).error.code).toBe('MCP_OAUTH_FAILED');

    // Stored by the credentials service for this org, server and issuer only.
    const ref = { server_id: done.server.id, issuer: as.tokenUrl };
    const stored = ok(await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', { org_id: org, ...ref }));
    expect(stored.tokens).toMatchObject({ access_token: 'at-1', refresh_token: 'rt-1' });
    expect(
      ok(await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', { org_id: uniqueOrg('other'), ...ref }))
        .tokens,
    ).toBeNull();
    expect(
      ok(
        await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', {
          org_id: org,
          ...ref,
          issuer: `${as.tokenUrl}/other`,
        }),
      ).tokens,
    ).toBeNull();

    const run = () =>
      client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'guarded_echo', args: { text: 'in' } },
        { timeoutMs: 30_000 },
      );
    expect(await run()).toMatchObject({ status: 'success', func_return: 'in' });
    expect(f.observed.headers.authorization).toBe('Bearer at-1');
    // Past four fifths of the 2 s lifetime: the refresh token buys a new access token first.
    await sleep(1800);
    expect(await run()).toMatchObject({ status: 'success', func_return: 'in' });
    expect(f.observed.headers.authorization).toBe('Bearer at-2');
    expect(as.grants).toEqual(['authorization_code', 'refresh_token']);
    expect(
      ok(await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', { org_id: org, ...ref })).tokens,
    ).toMatchObject({ access_token: 'at-2', refresh_token: 'rt-2' });

    ok(await client.req('toolplane.v1.mcp.servers.remove', { org_id: org, name: 'oauth-code' }));
    expect(
      ok(await client.req('toolplane.internal.v1.mcp-oauth-tokens.fetch', { org_id: org, ...ref })).tokens,
    ).toBeNull();
  });
});
