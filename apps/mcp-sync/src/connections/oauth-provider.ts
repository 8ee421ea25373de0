import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import { ErrorCode, ToolplaneError, type McpAuthInput, type TokenEndpointAuthMethod } from '@toolplane/contracts';
import { randomBytes } from 'node:crypto';
import type { OAuthState } from '../store/oauth-state';

/** An OAuth server auth with its templates (client_secret, private_key) resolved: memory only. */
export type OAuthAuth = Extract<McpAuthInput, { type: 'oauth' }>;

export type { OAuthState };

/** Where a provider keeps the tokens of its issuer (the credentials service, through OAuthClient). */
export interface TokenSink {
  load(issuer: string): Promise<OAuthTokens | undefined>;
  save(issuer: string, tokens: OAuthTokens): Promise<void>;
}

export interface ProviderOptions {
  auth: OAuthAuth;
  state: OAuthState;
  redirectUri: string;
  /** This deployment's Client ID Metadata Document (an https URL), used where the server supports it. */
  clientMetadataUrl?: string;
  tokens: TokenSink;
  /** The `state` parameter of the authorization request. */
  stateParam?: string;
  /** The PKCE verifier of a pending authorization (complete). */
  verifier?: string;
  /** The scope to ask for now (step-up), over the configured one. */
  scope?: string;
  /** The stored tokens must not be used (refused by the server, or a step-up needs a new authorization). */
  ignoreTokens?: boolean;
}

const PREFERRED_METHODS: TokenEndpointAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'none'];

/** The grant an auth asks for: authorization code unless client credentials are named. */
export function grantOf(auth: OAuthAuth): 'authorization_code' | 'client_credentials' {
  return auth.grant_type ?? 'authorization_code';
}

/** The canonical URI of an MCP server (RFC 8707 resource): its URL without a fragment. */
export function canonicalResource(serverUrl: string | URL): URL {
  const u = new URL(serverUrl);
  u.hash = '';
  return u;
}

/** Whether a resource indicator covers the server (same origin, a path prefix): its tokens may go there. */
export function coversServer(resource: string, serverUrl: string | URL): boolean {
  try {
    return checkResourceAllowed({ requestedResource: canonicalResource(serverUrl), configuredResource: resource });
  } catch {
    return false;
  }
}

/**
 * The MCP SDK's OAuthClientProvider over Toolplane's state: the SDK's `auth()` does the protocol
 * (RFC 9728 and RFC 8414 discovery, registration, PKCE, RFC 8707, token-endpoint client
 * authentication, refresh); this object answers its questions from the server's configured auth
 * (which overrides discovery), its OAuthState (mutated in place: `changed` says so) and the token
 * sink. One instance per flow.
 */
export class McpOAuthProvider implements OAuthClientProvider {
  /** The URL the SDK asked to open (authorization code: the user opens it). */
  authorizationUrl?: URL;
  changed = false;
  readonly addClientAuthentication?: OAuthClientProvider['addClientAuthentication'];
  private verifier?: string;
  private readonly stateParam: string;
  private ignoreTokens: boolean;

  constructor(private readonly o: ProviderOptions) {
    this.verifier = o.verifier;
    this.ignoreTokens = o.ignoreTokens ?? false;
    this.stateParam = o.stateParam ?? randomBytes(24).toString('base64url');
    const auth = o.auth;
    if (auth.private_key !== undefined && auth.client_id !== undefined) {
      // RFC 7523 client assertion, audience the authorization server's issuer.
      this.addClientAuthentication = createPrivateKeyJwtAuth({
        issuer: auth.client_id,
        subject: auth.client_id,
        privateKey: parseKey(auth.private_key),
        alg: auth.signing_alg ?? 'ES256',
      });
    }
  }

  /** What this flow learned (persisted with the server when `changed`). */
  get oauthState(): OAuthState {
    return this.o.state;
  }

  get redirectUrl(): string | undefined {
    return grantOf(this.o.auth) === 'authorization_code' ? this.o.redirectUri : undefined;
  }

  /** Offered only when no client id is configured (the SDK uses it where the server supports CIMD). */
  get clientMetadataUrl(): string | undefined {
    return this.o.auth.client_id === undefined ? this.o.clientMetadataUrl : undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    const code = grantOf(this.o.auth) === 'authorization_code';
    return {
      client_name: 'Toolplane',
      redirect_uris: code ? [this.o.redirectUri] : [],
      grant_types: code ? ['authorization_code', 'refresh_token'] : ['client_credentials'],
      response_types: code ? ['code'] : [],
      token_endpoint_auth_method: this.registrationMethod(),
      ...((this.o.scope ?? this.o.auth.scope) ? { scope: this.o.scope ?? this.o.auth.scope } : {}),
    };
  }

  /** The authorization server these tokens come from (the token store's key), once known. */
  issuer(): string | undefined {
    return issuerOf(this.o.auth, this.o.state);
  }

  /** The authorization request's `state` parameter. */
  state(): string {
    return this.stateParam;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const a = this.o.auth;
    if (a.client_id !== undefined) {
      return {
        client_id: a.client_id,
        ...(a.client_secret !== undefined ? { client_secret: a.client_secret } : {}),
        ...(a.token_endpoint_auth_method && a.token_endpoint_auth_method !== 'private_key_jwt'
          ? { token_endpoint_auth_method: a.token_endpoint_auth_method }
          : {}),
      };
    }
    return this.o.state.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    if (this.o.auth.client_id !== undefined) return; // configured: nothing to keep
    this.o.state.client = info;
    this.changed = true;
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.ignoreTokens) return undefined;
    const issuer = this.issuer();
    return issuer ? this.o.tokens.load(issuer) : undefined;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const issuer = (tokens as { issuer?: string }).issuer ?? this.issuer();
    if (!issuer)
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        'OAuth tokens arrived before the authorization server was known',
      );
    await this.o.tokens.save(issuer, tokens);
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'No PKCE verifier for this authorization');
    return this.verifier;
  }

  get pkceVerifier(): string | undefined {
    return this.verifier;
  }

  prepareTokenRequest(scope?: string): URLSearchParams | undefined {
    if (grantOf(this.o.auth) !== 'client_credentials') return undefined;
    return new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
  }

  /**
   * RFC 8707: the resource is the server's canonical URI, or the Protected Resource Metadata's
   * `resource` when it covers this server (same origin, a path prefix); any other is refused
   * before anything is sent to an authorization server.
   */
  async validateResourceURL(serverUrl: string | URL, resource?: string): Promise<URL> {
    const canonical = canonicalResource(serverUrl);
    let chosen = canonical;
    if (resource !== undefined) {
      if (!coversServer(resource, canonical)) {
        throw new ToolplaneError(
          ErrorCode.MCP_OAUTH_FAILED,
          `The server's Protected Resource Metadata names the resource ${resource}, which is not ${canonical.href}: refused (its tokens would be for another server)`,
          { resource, server: canonical.href },
          false,
        );
      }
      chosen = new URL(resource);
    }
    if (this.o.state.resource !== chosen.href) {
      this.o.state.resource = chosen.href;
      this.changed = true;
    }
    return chosen;
  }

  /** What this flow uses was discovered (nothing configured overrides it) and could be discovered again. */
  rediscoverable(): boolean {
    const a = this.o.auth;
    return this.o.state.discovery !== undefined && a.issuer === undefined && !hasEndpoints(a);
  }

  /** Configured endpoints over discovered ones: what is given always wins. */
  discoveryState(): OAuthDiscoveryState | undefined {
    const a = this.o.auth;
    const found = this.o.state.discovery;
    const server = issuerOf(a, this.o.state);
    if (!hasEndpoints(a))
      return a.issuer === undefined || found?.authorizationServerUrl === a.issuer
        ? found
        : { authorizationServerUrl: a.issuer };
    const base = found?.authorizationServerMetadata;
    const origin = new URL(a.token_url ?? a.authorization_url ?? a.registration_url!).origin;
    const metadata = {
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      ...base,
      issuer: a.issuer ?? base?.issuer ?? origin,
      authorization_endpoint: a.authorization_url ?? base?.authorization_endpoint ?? `${origin}/authorize`,
      token_endpoint: a.token_url ?? base?.token_endpoint ?? `${origin}/token`,
      ...(a.registration_url ? { registration_endpoint: a.registration_url } : {}),
      ...(a.token_endpoint_auth_method
        ? { token_endpoint_auth_methods_supported: [a.token_endpoint_auth_method] }
        : {}),
    } as AuthorizationServerMetadata;
    return { ...found, authorizationServerUrl: server!, authorizationServerMetadata: metadata };
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    if (JSON.stringify(this.o.state.discovery) === JSON.stringify(state)) return;
    this.o.state.discovery = state;
    this.changed = true;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'discovery') delete this.o.state.discovery;
    if (scope === 'all' || scope === 'client') delete this.o.state.client;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'tokens') this.ignoreTokens = true;
    this.changed = true;
  }

  /**
   * The method asked for at registration: the configured one, else the best the server lists
   * (a confidential client first: Toolplane keeps secrets), else HTTP Basic (RFC 8414's default).
   */
  private registrationMethod(): string {
    const configured = this.o.auth.token_endpoint_auth_method;
    if (configured) return configured;
    const supported = this.o.state.discovery?.authorizationServerMetadata?.token_endpoint_auth_methods_supported;
    if (!supported?.length) return 'client_secret_basic';
    return PREFERRED_METHODS.find((m) => supported.includes(m)) ?? supported[0]!;
  }
}

function hasEndpoints(a: OAuthAuth): boolean {
  return a.token_url !== undefined || a.authorization_url !== undefined || a.registration_url !== undefined;
}

/**
 * The authorization server a server's tokens come from (the token store's key), once known: the
 * configured issuer, else the configured token endpoint (as keyed before discovery existed), else
 * what discovery found. Cheap: asked on every request to the server.
 */
export function issuerOf(a: OAuthAuth, state: OAuthState): string | undefined {
  if (!hasEndpoints(a)) return a.issuer ?? state.discovery?.authorizationServerUrl;
  return (
    a.issuer ??
    a.token_url ??
    state.discovery?.authorizationServerUrl ??
    new URL((a.authorization_url ?? a.registration_url)!).origin
  );
}

/** A PEM (PKCS#8) key as it is, a JWK given as JSON as an object. */
function parseKey(key: string): string | Record<string, unknown> {
  const t = key.trim();
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t) as Record<string, unknown>;
    } catch {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        'auth.private_key is neither a PEM key nor a JWK',
        undefined,
        false,
      );
    }
  }
  return t;
}
