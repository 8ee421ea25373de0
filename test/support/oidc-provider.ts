/**
 * A real OpenID Connect provider (npm `oidc-provider`, a certified implementation) on a loopback
 * port, issuing JWT access tokens (RFC 9068) for a resource indicator (RFC 8707) through the
 * client_credentials grant: each client is one end user (its id is the token's `sub`), with the
 * org it acts for as an extra claim. `sign` makes a token with the provider's own key and any
 * claims (an expired one, say), for what a grant cannot produce.
 */
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface TestIdp {
  issuer: string;
  /** An access token for `resource` with `scope`, as the token endpoint answers it. */
  token(client: string, resource: string, scope: string): Promise<string>;
  /** A JWT signed with the provider's key: issuer, kid and typ of its own tokens, the claims given. */
  sign(claims: JWTPayload): Promise<string>;
  stop(): Promise<void>;
}

/** `clients`: client id → the org claim of its tokens. Scopes the resource server knows: `scopes`. */
export async function startTestIdp(clients: Record<string, string>, scopes: string[]): Promise<TestIdp> {
  const kid = 'test-key';
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    clients: Object.keys(clients).map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: 'ES256',
    })),
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' }] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => ({
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    ttl: { ClientCredentials: 300 },
    extraTokenClaims: async (_ctx: unknown, token: { clientId?: string }) => ({
      org_id: clients[token.clientId ?? ''],
    }),
  });
  server.on('request', provider.callback());

  return {
    issuer,
    async token(client, resource, scope) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
      });
      const body = (await res.json()) as { access_token?: string };
      if (res.status !== 200 || !body.access_token)
        throw new Error(`token endpoint answered ${res.status}: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    sign: (claims) => signWith(privateKey, kid, { iss: issuer, ...claims }),
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function signWith(key: CryptoKey, kid: string, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(key);
}
