/**
 * The gateway as a web edge, attacked as a browser page or a careless client would: a body past
 * the limit (413), a token past its rate (429 with Retry-After), a method or content type it does
 * not take, JSON that is not JSON, an expired or revoked token (401), a forged session id (404) —
 * each a clear answer, never a stack trace or an internal address.
 */
import { TokenSigner } from '../../apps/credentials/src/auth/token-signer';
import { parseKeyRingSpec } from '../../apps/credentials/src/key-ring-spec';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startApp, stopProcess, type RunningApp } from '../support/stack';

describe('MCP gateway: the edge', () => {
  let nats: RawClient;
  let gateway: RunningApp;
  let base: string;
  const org = uniqueOrg('gw-edge');
  const url = () => `${base}/mcp/agents/edge-agent`;
  const headers = (token: string, extra: Record<string, string> = {}) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    ...extra,
  });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'edge', version: '1' } },
  };
  /** Every answer of the gateway: no stack frame, no internal address or path. */
  const clean = (text: string) => {
    expect(text).not.toMatch(/\n\s+at |node_modules|\/work\/|\/dist\/|127\.0\.0\.1:4222|postgres:\/\//);
    return text;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    // Its own gateway, with small limits: 3 requests at once, then one per 10 s; 2 KiB bodies.
    gateway = await startApp('mcp-gateway', {
      prefix: testPrefix(),
      databaseUrl: testDatabaseUrl(),
      appEnv: {
        'mcp-gateway': { GATEWAY_RATE_PER_SECOND: '0.1', GATEWAY_RATE_BURST: '3', GATEWAY_MAX_BODY_BYTES: '2048' },
      },
    });
    base = `http://127.0.0.1:${gateway.httpPort}`;
  }, 120_000);
  afterAll(async () => {
    await stopProcess(gateway.proc);
    await nats.close();
  });

  it('refuses a body past the limit with 413, before reading it as JSON', async () => {
    const token = (await nats.mint(org, { name: 'edge-413' })).token;
    const res = await fetch(url(), {
      method: 'POST',
      headers: headers(token),
      body: JSON.stringify({ ...initialize, params: { ...initialize.params, pad: 'x'.repeat(5000) } }),
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(clean(await res.text())).error.message).toMatch(/larger than 2048 bytes/);
  });

  it('answers 429 with Retry-After once a token is past its rate, and other tokens are not affected', async () => {
    const token = (await nats.mint(org, { name: 'edge-429' })).token;
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 5; i++) {
      const res = await fetch(url(), { method: 'POST', headers: headers(token), body: JSON.stringify(initialize) });
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers.get('retry-after');
      clean(await res.text());
    }
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3)).toEqual([429, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    const other = (await nats.mint(org, { name: 'edge-429-other' })).token;
    expect(
      (await fetch(url(), { method: 'POST', headers: headers(other), body: JSON.stringify(initialize) })).status,
    ).toBe(200);
  });

  it('answers bad requests plainly: a method, a content type, JSON that is not JSON, a forged session', async () => {
    const token = (await nats.mint(org, { name: 'edge-400' })).token;
    const put = await fetch(url(), { method: 'PUT', headers: headers(token), body: '{}' });
    expect(put.status).toBe(405);
    clean(await put.text());
    const text = await fetch(url(), {
      method: 'POST',
      headers: headers(token, { 'content-type': 'text/plain' }),
      body: JSON.stringify(initialize),
    });
    expect(text.status).toBe(415);
    const parse = await fetch(url(), {
      method: 'POST',
      headers: headers(await nats.tokenFor(org)),
      body: '{"jsonrpc": "2.0", "id": 1, "method": ',
    });
    expect(parse.status).toBe(400);
    expect(JSON.parse(clean(await parse.text())).error.code).toBe(-32700);
    const forged = await fetch(url(), {
      method: 'POST',
      headers: headers(await nats.tokenFor(org), {
        'mcp-session-id': 'A'.repeat(43),
        'mcp-protocol-version': '2025-11-25',
      }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    });
    expect(forged.status).toBe(404);
    clean(await forged.text());
  });

  it('refuses an expired token and a revoked one with 401 invalid_token, a read-only token with 403 and the scope it needs', async () => {
    // Signed with the credentials service's own key ring, an hour past its expiry.
    const keys = parseKeyRingSpec(process.env.TOOLPLANE_TEST_CREDENTIALS_KEYS!);
    const now = Math.floor(Date.now() / 1000);
    const token = await new TokenSigner({ keys, activeKeyId: [...keys.keys()].at(-1)! }).sign({
      jti: 'tok-00000000-0000-4000-8000-0000000000ed',
      org,
      scopes: ['tools:execute'],
      issuedAt: new Date((now - 7200) * 1000),
      expiresAt: new Date((now - 3600) * 1000),
    });
    const expired = await fetch(url(), { method: 'POST', headers: headers(token), body: JSON.stringify(initialize) });
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toMatch(/error="invalid_token".*expired/);
    clean(await expired.text());

    const revoked = await nats.mint(org, { name: 'edge-rev' });
    expect(
      (await fetch(url(), { method: 'POST', headers: headers(revoked.token), body: JSON.stringify(initialize) }))
        .status,
    ).toBe(200);
    const r = await nats.req('toolplane.v1.auth.tokens.revoke', { org_id: org, token_id: revoked.token_id });
    expect(r.error).toBeUndefined();
    // Revocations reach every verifier within its refresh: wait for this one's.
    let status = 0;
    for (let i = 0; i < 100 && status !== 401; i++) {
      status = (
        await fetch(url(), { method: 'POST', headers: headers(revoked.token), body: JSON.stringify(initialize) })
      ).status;
      if (status !== 401) await new Promise((res) => setTimeout(res, 100));
    }
    expect(status).toBe(401);

    const reader = await nats.mint(org, { name: 'edge-ro', scopes: ['tools:read'] });
    const forbidden = await fetch(url(), {
      method: 'POST',
      headers: headers(reader.token),
      body: JSON.stringify(initialize),
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('www-authenticate')).toMatch(/error="insufficient_scope".*scope="tools:execute"/);
  });
});
