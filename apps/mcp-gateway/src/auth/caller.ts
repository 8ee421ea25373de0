import type { Scope } from '@toolplane/contracts';

/** Who sent an HTTP request to the gateway, as its bearer token says. */
export interface Caller {
  org: string;
  scopes: ReadonlySet<Scope>;
  /**
   * What a session is bound to: the org token's id, or a JWT's issuer and subject (a client that
   * refreshes its access token keeps its session; another token or another user does not).
   */
  identity: string;
  /** The end user (a JWT's subject, mapped by the issuer's configuration); null for an org token. */
  userId: string | null;
  via: 'org-token' | 'oidc';
}

/**
 * A refused token, answered as the MCP authorization spec asks of a resource server: 401 with
 * `WWW-Authenticate: Bearer error="invalid_token"` (missing, malformed, expired, unknown issuer…),
 * 403 with `error="insufficient_scope"` and the scope needed, both naming the endpoint's
 * protected resource metadata (RFC 9728).
 */
export class AuthRefused extends Error {
  constructor(
    readonly status: 401 | 403,
    readonly error: 'invalid_request' | 'invalid_token' | 'insufficient_scope',
    message: string,
    readonly scope?: string,
  ) {
    super(message);
  }
}

/** Verifies a JWT of a configured OIDC issuer (apps/mcp-gateway/src/auth/oidc-verifier.ts). */
export interface BearerVerifier {
  /** Whether this verifier takes the token (e.g. its issuer is configured); the org token verifier takes the rest. */
  accepts(token: string): boolean;
  /** The caller, or AuthRefused. `resource` is the endpoint's canonical URI (RFC 8707: the audience to check). */
  verify(token: string, resource: string): Promise<Caller>;
}
