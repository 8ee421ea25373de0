import { ConfigError } from '@toolplane/platform';
import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JSONWebKeySet,
  type JWTPayload,
} from 'jose';
import { createServer, type Server } from 'node:http';
import { AuthRefused } from './caller';
import { loadGatewayConfig, OidcIssuerConfig } from '../mcp-gateway.config';
import { OidcVerifier, scopesOf } from './oidc-verifier';

const ISSUER = 'https://idp.example.com';
const RESOURCE = 'https://tools.example.com/mcp/agents/agent-1';

describe('OidcVerifier', () => {
  let es256: { privateKey: CryptoKey; jwks: JSONWebKeySet };
  let stranger: CryptoKey;

  const issuer = (extra: Record<string, unknown> = {}) =>
    OidcIssuerConfig.parse({ issuer: ISSUER, org: { claim: 'org_id' }, ...extra });
  const newSut = (configs = [issuer()], publicUrl?: string) =>
    new OidcVerifier(configs, { development: false, publicUrl, keys: () => createLocalJWKSet(es256.jwks) });
  const sign = (claims: JWTPayload, opts: { key?: CryptoKey; alg?: string; exp?: number | string } = {}) =>
    new SignJWT({
      iss: ISSUER,
      aud: RESOURCE,
      sub: 'user-1',
      org_id: 'org-a',
      scope: 'tools:read tools:execute',
      ...claims,
    })
      .setProtectedHeader({ alg: opts.alg ?? 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m')
      .sign(opts.key ?? es256.privateKey);
  const refusal = async (p: Promise<unknown>): Promise<AuthRefused> => {
    const e = await p.then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(AuthRefused);
    return e as AuthRefused;
  };

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    es256 = {
      privateKey: pair.privateKey,
      jwks: { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] },
    };
    stranger = (await generateKeyPair('ES256')).privateKey;
  });

  describe('accepts', () => {
    it('takes tokens of a configured issuer only, never a Toolplane org token or a non-JWT', async () => {
      const sut = newSut();
      expect(sut.accepts(await sign({}))).toBe(true);
      expect(sut.accepts(await sign({ iss: 'https://other.example.com' }))).toBe(false);
      expect(sut.accepts(await sign({ iss: 'toolplane' }))).toBe(false);
      expect(sut.accepts('not-a-jwt')).toBe(false);
    });
  });

  describe('verify', () => {
    it('maps a valid token to its org, end user, scopes and an identity of issuer and subject', async () => {
      const caller = await newSut().verify(await sign({}), RESOURCE);
      expect(caller).toEqual({
        org: 'org-a',
        userId: 'user-1',
        identity: `oidc:${ISSUER}#user-1`,
        via: 'oidc',
        scopes: new Set(['tools:read', 'tools:execute']),
      });
    });

    it('takes a fixed org and another user claim when the issuer says so', async () => {
      const sut = newSut([issuer({ org: { value: 'org-fixed' }, user_claim: 'email' })]);
      const caller = await sut.verify(await sign({ org_id: undefined, email: 'ann@example.com' }), RESOURCE);
      expect(caller).toMatchObject({ org: 'org-fixed', userId: 'ann@example.com', identity: `oidc:${ISSUER}#user-1` });
    });

    it('refuses a missing org or user claim with a reason naming the claim, not any value of the token', async () => {
      const token = await sign({ org_id: undefined });
      const noOrg = await refusal(newSut().verify(token, RESOURCE));
      expect(noOrg).toMatchObject({ status: 401, error: 'invalid_token' });
      expect(noOrg.message).toMatch(/"org_id" claim/);
      expect(noOrg.message).not.toContain(token);
      const badOrg = await refusal(newSut().verify(await sign({ org_id: 'has space' }), RESOURCE));
      expect(badOrg.message).toMatch(/"org_id" claim/);
      expect(badOrg.message).not.toContain('has space');
      const noUser = await refusal(newSut([issuer({ user_claim: 'oid' })]).verify(await sign({}), RESOURCE));
      expect(noUser.message).toMatch(/"oid" claim \(the end user\)/);
    });

    it('accepts the endpoint’s resource or the gateway’s base URL as audience, and refuses another', async () => {
      const sut = newSut([issuer()], 'https://tools.example.com');
      await expect(sut.verify(await sign({ aud: ['someone-else', RESOURCE] }), RESOURCE)).resolves.toMatchObject({
        org: 'org-a',
      });
      await expect(sut.verify(await sign({ aud: 'https://tools.example.com' }), RESOURCE)).resolves.toMatchObject({
        org: 'org-a',
      });
      const other = await refusal(
        sut.verify(await sign({ aud: 'https://tools.example.com/mcp/agents/agent-2' }), RESOURCE),
      );
      expect(other).toMatchObject({ status: 401, error: 'invalid_token' });
      expect(other.message).toMatch(/not issued for this resource/);
      // Without a public URL the base is the resource's own origin and prefix.
      await expect(newSut().verify(await sign({ aud: 'https://tools.example.com' }), RESOURCE)).resolves.toMatchObject({
        org: 'org-a',
      });
    });

    it('checks a configured audience instead of the resource', async () => {
      const sut = newSut([issuer({ audience: ['api://toolplane'] })]);
      await expect(sut.verify(await sign({ aud: 'api://toolplane' }), RESOURCE)).resolves.toMatchObject({
        org: 'org-a',
      });
      expect((await refusal(sut.verify(await sign({}), RESOURCE))).message).toMatch(/not issued for this resource/);
    });

    it('refuses an expired token, a token without exp, and one not valid yet (beyond the clock tolerance)', async () => {
      const sut = newSut();
      const now = Math.floor(Date.now() / 1000);
      expect((await refusal(sut.verify(await sign({}, { exp: now - 120 }), RESOURCE))).message).toBe(
        'The token has expired',
      );
      await expect(sut.verify(await sign({}, { exp: now - 5 }), RESOURCE)).resolves.toMatchObject({ org: 'org-a' });
      const noExp = await new SignJWT({ iss: ISSUER, aud: RESOURCE, sub: 'u', org_id: 'org-a' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .sign(es256.privateKey);
      expect((await refusal(sut.verify(noExp, RESOURCE))).message).toMatch(/no "exp" claim/);
      expect((await refusal(sut.verify(await sign({ nbf: now + 600 }), RESOURCE))).message).toMatch(/not valid yet/);
    });

    it('refuses a forged signature, an algorithm outside the allowlist, and an unsigned token', async () => {
      const sut = newSut();
      expect((await refusal(sut.verify(await sign({}, { key: stranger }), RESOURCE))).message).toMatch(
        /signature is not valid/,
      );
      const es256Only = newSut([issuer({ algorithms: ['RS256'] })]);
      expect((await refusal(es256Only.verify(await sign({}), RESOURCE))).message).toMatch(/algorithm/);
      const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const none = `${b64({ alg: 'none' })}.${b64({ iss: ISSUER, aud: RESOURCE, sub: 'u', org_id: 'org-a', scope: 'tools:execute', exp: 9e9 })}.`;
      expect(sut.accepts(none)).toBe(true);
      expect(await refusal(sut.verify(none, RESOURCE))).toMatchObject({ status: 401, error: 'invalid_token' });
    });

    it('refuses a token whose issuer is not configured', async () => {
      const e = await refusal(newSut().verify(await sign({ iss: 'https://other.example.com' }), RESOURCE));
      expect(e.message).toMatch(/issuer is not one this gateway trusts/);
    });
  });

  describe('scopes', () => {
    const payload = (p: JWTPayload) => p;
    it('keeps Toolplane scope names as they are (never admin) and reads scp arrays when scope is absent', () => {
      expect(scopesOf(issuer(), payload({ scope: 'openid tools:execute admin' }))).toEqual(new Set(['tools:execute']));
      expect(scopesOf(issuer(), payload({ scp: ['tools:read', 'profile'] }))).toEqual(new Set(['tools:read']));
      expect(scopesOf(issuer(), payload({}))).toEqual(new Set());
    });
    it('maps IdP scopes through scope_map only (an unmapped scope grants nothing, even a Toolplane name)', () => {
      const config = issuer({
        scope_map: { 'mcp:tools': ['tools:read', 'tools:execute'], 'mcp:list': ['tools:read'] },
        scope_claim: 'perms',
      });
      expect(scopesOf(config, payload({ perms: 'mcp:tools' }))).toEqual(new Set(['tools:read', 'tools:execute']));
      expect(scopesOf(config, payload({ perms: ['mcp:list', 'tools:execute', 'constructor'] }))).toEqual(
        new Set(['tools:read']),
      );
    });
  });

  describe('discovery', () => {
    let server: Server;
    let base: string;
    const served: string[] = [];
    let discovery: (base: string) => unknown;

    beforeAll(async () => {
      server = createServer((req, res) => {
        served.push(req.url ?? '');
        if (req.url === '/.well-known/openid-configuration')
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discovery(base)));
        if (req.url === '/jwks')
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(es256.jwks));
        if (req.url === '/huge')
          return void res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ issuer: base, pad: 'x'.repeat(300_000) }));
        res.writeHead(404).end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));
    beforeEach(() => {
      served.length = 0;
      discovery = (b) => ({ issuer: b, jwks_uri: `${b}/jwks` });
    });

    const remoteSut = (development = true) =>
      new OidcVerifier([OidcIssuerConfig.parse({ issuer: base, org: { claim: 'org_id' } })], { development });

    it('finds the keys through the issuer’s discovery document once, then verifies with them', async () => {
      const sut = remoteSut();
      const token = await sign({ iss: base });
      await expect(sut.verify(token, RESOURCE)).resolves.toMatchObject({
        org: 'org-a',
        identity: `oidc:${base}#user-1`,
      });
      await expect(sut.verify(token, RESOURCE)).resolves.toMatchObject({ org: 'org-a' });
      expect(served).toEqual(['/.well-known/openid-configuration', '/jwks']);
    });

    it('refuses a discovery document of another issuer, a plain-http jwks_uri outside development, and one too large (503, not the token’s fault)', async () => {
      discovery = () => ({ issuer: 'https://someone-else.example.com', jwks_uri: `${base}/jwks` });
      await expect(remoteSut().verify(await sign({ iss: base }), RESOURCE)).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        retryable: true,
      });
      discovery = (b) => ({ issuer: b, jwks_uri: `${b}/jwks` });
      await expect(remoteSut(false).verify(await sign({ iss: base }), RESOURCE)).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
      });
      discovery = (b) => ({ issuer: b, jwks_uri: `${b}/huge` });
      await expect(remoteSut().verify(await sign({ iss: base }), RESOURCE)).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
      });
      expect(served).not.toContain('/jwks');
    });

    it('after a failed discovery, answers at once instead of asking the IdP on every request', async () => {
      discovery = () => ({ issuer: 'https://someone-else.example.com' });
      const sut = remoteSut();
      const token = await sign({ iss: base });
      await expect(sut.verify(token, RESOURCE)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      await expect(sut.verify(token, RESOURCE)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(served).toEqual(['/.well-known/openid-configuration']);
    });
  });
});

describe('GATEWAY_OIDC_ISSUERS', () => {
  const load = (issuers: unknown[], env: Record<string, string> = {}) =>
    loadGatewayConfig({ GATEWAY_OIDC_ISSUERS: JSON.stringify(issuers), ...env });

  it('fills in the defaults', () => {
    const [one] = load([{ issuer: ISSUER, org: { claim: 'tid' }, audience: 'api://tp' }]).GATEWAY_OIDC_ISSUERS;
    expect(one).toEqual({
      issuer: ISSUER,
      org: { claim: 'tid' },
      audience: 'api://tp',
      user_claim: 'sub',
      scope_claim: 'scope',
      algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
    });
  });

  it('refuses http issuers but a loopback one in development, symmetric algorithms, admin in scope_map, and unknown fields', () => {
    const loopback = { issuer: 'http://127.0.0.1:9999', org: { value: 'org-a' } };
    expect(() => load([loopback], { GATEWAY_PUBLIC_URL: 'https://tools.example.com' })).toThrow(
      /0\.issuer: https only/,
    );
    expect(load([loopback], { TOOLPLANE_PROFILE: 'development' }).GATEWAY_OIDC_ISSUERS).toHaveLength(1);
    expect(() =>
      load([{ ...loopback, issuer: 'http://idp.example.com' }], { TOOLPLANE_PROFILE: 'development' }),
    ).toThrow(ConfigError);
    expect(() => load([{ ...loopback, algorithms: ['HS256'] }], { TOOLPLANE_PROFILE: 'development' })).toThrow(
      /algorithms/,
    );
    expect(() => load([{ ...loopback, scope_map: { x: ['admin'] } }], { TOOLPLANE_PROFILE: 'development' })).toThrow(
      /scope_map/,
    );
    expect(() => load([{ ...loopback, audiences: 'x' }], { TOOLPLANE_PROFILE: 'development' })).toThrow(/audiences/);
  });

  it('in production, needs GATEWAY_PUBLIC_URL or an explicit audience (the Host header must not choose the audience)', () => {
    const idp = { issuer: ISSUER, org: { claim: 'tid' } };
    expect(() => load([idp])).toThrow(/0\.audience: set it, or GATEWAY_PUBLIC_URL/);
    expect(load([idp], { GATEWAY_PUBLIC_URL: 'https://tools.example.com' }).GATEWAY_OIDC_ISSUERS).toHaveLength(1);
    expect(load([{ ...idp, audience: 'api://tp' }]).GATEWAY_OIDC_ISSUERS).toHaveLength(1);
  });
});
