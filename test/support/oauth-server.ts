/**
 * A discoverable OAuth 2.1 authorization server on a loopback port, for MCP OAuth tests: RFC 8414
 * metadata (mutable: a test can move the token endpoint between syncs), Dynamic Client
 * Registration (which a test can make fail), `/authorize` (PKCE S256, redirects with a code) and a
 * token endpoint for the authorization-code, refresh and client-credentials grants, and an RFC 7009
 * revocation endpoint. The person who opens `/authorize` may name who they log in as (`login`, a
 * test's stand-in for a login form): the tokens then are that user's (`issued[...].user`). Every
 * token, registration and revocation request is recorded (form, Authorization header) for assertions.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

export interface TokenRequest {
  path: string;
  form: Record<string, string>;
  authorization?: string;
}

export interface DiscoverableAuthServer {
  issuer: string;
  /** The metadata served (edit it to change what the next discovery finds). */
  metadata: Record<string, unknown>;
  /** Token endpoint paths that answer (others: 404). */
  tokenPaths: Set<string>;
  /** Registration answers this status with an error when set. */
  failRegistration?: number;
  /** The refresh_token grant answers invalid_grant when set (a revoked grant). */
  failRefresh?: boolean;
  tokenRequests: TokenRequest[];
  registrations: Array<Record<string, unknown>>;
  /** Access tokens issued, with the resource they were asked for and the user who logged in (authorization code). */
  issued: Map<string, { resource: string | undefined; expiresAt: number; user?: string }>;
  /** Requests to the revocation endpoint (RFC 7009). */
  revocations: TokenRequest[];
  /** An unexpired access token of this server for `resource`. */
  accepts(header: string | undefined, resource: string): boolean;
  stop(): Promise<void>;
}

export async function startDiscoverableAuthServer(opts: { expiresIn?: number } = {}): Promise<DiscoverableAuthServer> {
  const expiresIn = opts.expiresIn ?? 3600;
  const codes = new Map<string, { challenge: string; redirectUri: string; resource?: string; user?: string }>();
  /** refresh token -> the user it was issued to, and its access tokens (revoked with it). */
  const refreshes = new Map<string, { user?: string; access: Set<string> }>();
  const clients = new Map<string, string>(); // client_id -> secret
  let n = 0;
  const state: Omit<DiscoverableAuthServer, 'stop' | 'accepts' | 'issuer' | 'metadata'> & {
    issuer: string;
    metadata: Record<string, unknown>;
  } = {
    failRefresh: false,
    issuer: '',
    metadata: {},
    tokenPaths: new Set(['/token']),
    tokenRequests: [],
    registrations: [],
    issued: new Map(),
    revocations: [],
  };
  const issue = (resource: string | undefined, user?: string, refreshToken?: string) => {
    n += 1;
    const token = `as-token-${n}-${randomUUID().slice(0, 8)}`;
    state.issued.set(token, { resource, expiresAt: Date.now() + expiresIn * 1000, ...(user ? { user } : {}) });
    const rt = refreshToken ?? `rt-${n}`;
    const grant = refreshes.get(rt) ?? { ...(user ? { user } : {}), access: new Set<string>() };
    grant.access.add(token);
    refreshes.set(rt, grant);
    return { access_token: token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: rt };
  };
  const http = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server')
      return json(200, state.metadata);
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = url.searchParams;
      if (
        q.get('response_type') !== 'code' ||
        !clients.has(q.get('client_id') ?? '') ||
        q.get('code_challenge_method') !== 'S256'
      )
        return json(400, { error: 'invalid_request' });
      const code = randomUUID();
      codes.set(code, {
        challenge: q.get('code_challenge')!,
        redirectUri: q.get('redirect_uri')!,
        resource: q.get('resource') ?? undefined,
        user: q.get('login') ?? undefined,
      });
      const to = new URL(q.get('redirect_uri')!);
      to.searchParams.set('code', code);
      to.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { location: to.href }).end();
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && url.pathname === '/register') {
        const doc = JSON.parse(body || '{}') as Record<string, unknown>;
        state.registrations.push(doc);
        if (state.failRegistration)
          return json(state.failRegistration, {
            error: 'invalid_client_metadata',
            error_description: 'registration is closed',
          });
        const id = `client-${state.registrations.length}`;
        const secret = `secret-${randomUUID().slice(0, 8)}`;
        clients.set(id, secret);
        return json(201, {
          ...doc,
          client_id: id,
          client_secret: secret,
          token_endpoint_auth_method: 'client_secret_basic',
        });
      }
      if (req.method === 'POST' && url.pathname === '/revoke') {
        const form = Object.fromEntries(new URLSearchParams(body));
        state.revocations.push({
          path: url.pathname,
          form,
          ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        });
        const grant = refreshes.get(form.token ?? '');
        if (grant) for (const t of grant.access) state.issued.delete(t);
        refreshes.delete(form.token ?? '');
        state.issued.delete(form.token ?? '');
        return res.writeHead(200).end();
      }
      if (req.method === 'POST' && state.tokenPaths.has(url.pathname)) {
        const form = Object.fromEntries(new URLSearchParams(body));
        state.tokenRequests.push({
          path: url.pathname,
          form,
          ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        });
        const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        const [id, secret] = basic
          ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent)
          : [form.client_id, form.client_secret];
        if (!id || clients.get(id) !== secret) return json(401, { error: 'invalid_client' });
        if (form.grant_type === 'client_credentials') return json(200, issue(form.resource));
        if (form.grant_type === 'authorization_code') {
          const c = codes.get(form.code ?? '');
          codes.delete(form.code ?? '');
          const ok =
            c &&
            createHash('sha256')
              .update(form.code_verifier ?? '')
              .digest('base64url') === c.challenge &&
            form.redirect_uri === c.redirectUri;
          return ok ? json(200, issue(form.resource, c.user)) : json(400, { error: 'invalid_grant' });
        }
        if (form.grant_type === 'refresh_token') {
          const grant = refreshes.get(form.refresh_token ?? '');
          if (state.failRefresh || !grant)
            return json(400, { error: 'invalid_grant', error_description: 'the grant was revoked' });
          return json(200, issue(form.resource, grant.user, form.refresh_token));
        }
        return json(400, { error: 'unsupported_grant_type' });
      }
      json(404, { error: 'not_found' });
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  state.issuer = base;
  state.metadata = {
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    registration_endpoint: `${base}/register`,
    revocation_endpoint: `${base}/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
  };
  /** A pre-registered client (client credentials). */
  clients.set('preregistered', 'pre-secret');
  return Object.assign(state, {
    accepts(header: string | undefined, resource: string) {
      const t = state.issued.get((header ?? '').replace(/^Bearer /, ''));
      return t !== undefined && t.expiresAt > Date.now() && t.resource === resource;
    },
    stop: () => new Promise<void>((r) => http.close(() => r())),
  });
}

/** Makes `mcp` an OAuth-protected resource of `as`: 401 with resource_metadata, and the Protected Resource Metadata (RFC 9728). */
export function protect(
  mcp: {
    url: string;
    origin: string;
    wwwAuthenticate?: string;
    wellKnown: Record<string, unknown>;
    acceptAuthorization?: (h: string | undefined) => boolean;
  },
  as: DiscoverableAuthServer,
  authorizationServer: string = as.issuer,
): void {
  const prm = '/.well-known/oauth-protected-resource/mcp';
  mcp.wellKnown[prm] = {
    resource: mcp.url,
    authorization_servers: [authorizationServer],
    bearer_methods_supported: ['header'],
  };
  mcp.wwwAuthenticate = `Bearer resource_metadata="${mcp.origin}${prm}"`;
  mcp.acceptAuthorization = (h) => as.accepts(h, mcp.url);
}
