import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { auth as sdkAuth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidGrantError, OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens as SdkTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import {
  ErrorCode,
  NO_REDISCOVERY_CODES,
  ToolplaneError,
  type McpServerInput,
  type OAuthTokenSet,
} from '@toolplane/contracts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { APP_CONFIG, PinnedHttp, UrlGuard } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';
import { ConnectionEvents } from './connection-events';
import { CLIENT_INFO } from './mcp-connection';
import { OAuthTokenStore } from './oauth-token-store';
import {
  canonicalResource,
  coversServer,
  grantOf,
  issuerOf,
  McpOAuthProvider,
  type OAuthAuth,
  type OAuthState,
} from './oauth-provider';

export type { OAuthAuth, OAuthState } from './oauth-provider';

/** Past this many awaited authorizations, expired ones are swept before another is kept. */
const MAX_AWAITING = 1000;

/** How long a metadata, registration or token host's vetted addresses are reused before its name is resolved again. */
const OAUTH_HOST_PIN_MS = 60_000;

/** One MCP server's OAuth as a flow needs it: where it is, its auth (templates resolved) and its state. */
export interface OAuthTarget {
  orgId: string;
  serverId: string;
  /**
   * An `account: "user"` server called for this end user: the user's own tokens (stored, cached,
   * awaited and refreshed apart from the org's and every other user's).
   */
  userId?: string;
  name: string;
  /** A server being added (not stored yet): its settings, for an authorization that must finish the add. */
  input?: McpServerInput;
  url: string;
  transport: 'sse' | 'streamable_http';
  auth: OAuthAuth;
  /** Mutated in place by the flows; persisted with the server (see onStateChange). */
  state: OAuthState;
}

/** A server that needs a user: a new authorization was started for it (refresh refused, or step-up). */
export interface AuthorizationNeeded {
  target: OAuthTarget;
  started: StartedAuthorization;
  reason: 'reauthorize' | 'step_up';
  scope: string | null;
}

/** A started authorization-code flow: the URL to open, and what completing it needs. */
export interface StartedAuthorization {
  url: URL;
  state: string;
  verifier: string;
}

/**
 * OAuth 2.1 for MCP servers, to the MCP authorization spec, through the MCP SDK's `auth()`:
 * discovery (RFC 9728 from the 401's WWW-Authenticate or the well-known paths, then RFC 8414 /
 * OpenID metadata), client registration (CIMD or RFC 7591), PKCE S256, the RFC 8707 resource in
 * every authorization and token request, client authentication chosen from the server's
 * `token_endpoint_auth_methods_supported` (basic, post, none) or private_key_jwt. Every request of
 * these flows goes through the SSRF policy (PinnedHttp: metadata, registration, token endpoints,
 * redirects).
 *
 * Tokens are stored by the credentials service per (org, server, authorization server), kept in
 * memory too, sent only to the server whose resource they were obtained for, and refreshed before
 * expiry (refresh_token grant, rotated refresh tokens kept; client credentials: a new grant). An
 * authorization-code server whose refresh fails must be authorized again (MCP_OAUTH_REAUTHORIZE).
 *
 * An `account: "user"` server's target carries the end user: everything keyed by server here
 * (cache, in-flight flows, awaited authorizations, the store) is keyed by (server, user) then, so
 * one user's token, or authorization URL, never serves another.
 */
@Injectable()
export class OAuthClient implements OnModuleDestroy {
  private readonly log = new Logger(OAuthClient.name);
  private readonly cache = new Map<string, OAuthTokenSet>();
  private readonly pending = new Map<string, Promise<string>>();
  private readonly http: PinnedHttp;
  private readonly timeoutMs: number;
  private stateListener?: (t: OAuthTarget) => Promise<void>;
  private requiredListener?: (n: AuthorizationNeeded) => Promise<{ expiresAt: string }>;
  /** Servers waiting for a user here: calls meanwhile get the same authorization, not a new one each. */
  private readonly awaiting = new Map<
    string,
    { reason: 'reauthorize' | 'step_up'; scope: string | null; expiresAt: number; error: ToolplaneError }
  >();

  constructor(
    private readonly store: OAuthTokenStore,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
    private readonly events: ConnectionEvents,
  ) {
    const guard = new UrlGuard({
      profile: config.TOOLPLANE_PROFILE,
      allowed: config.MCP_ALLOWED_HOSTS,
      allowlistSetting: 'MCP_ALLOWED_HOSTS',
      codes: { refused: ErrorCode.MCP_URL_REFUSED, unresolved: ErrorCode.MCP_CONNECTION_FAILED },
    });
    this.http = new PinnedHttp(guard, { ttlMs: OAUTH_HOST_PIN_MS, connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS });
    this.timeoutMs = config.MCP_CONNECT_TIMEOUT_MS;
  }

  async onModuleDestroy(): Promise<void> {
    await this.http.close();
  }

  /**
   * The SSRF-pinned fetch for the SDK's OAuth requests, answering the global Response class (the
   * SDK reads error bodies only from `instanceof Response`; undici's own class is another one).
   */
  private readonly fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const got: Response = await this.http.fetch(input, init);
    if (got instanceof Response) return got;
    const res = got as {
      status: number;
      statusText: string;
      headers: Headers;
      body: ReadableStream<Uint8Array> | null;
    };
    const empty =
      res.status === 204 || res.status === 205 || res.status === 304 || (res.status >= 100 && res.status < 200);
    return new Response(empty ? null : res.body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };

  /** Called when a flow changed a stored server's OAuth state (re-discovery, a new registration). */
  onStateChange(listener: (t: OAuthTarget) => Promise<void>): void {
    this.stateListener = listener;
  }

  /** Keeps a started authorization for a server that needs a user (pending row, the server marked): its expiry. */
  onAuthorizationRequired(listener: (n: AuthorizationNeeded) => Promise<{ expiresAt: string }>): void {
    this.requiredListener = listener;
  }

  /**
   * The Authorization header value for a request to the server: a fresh access token. `refused`:
   * an access token the server just refused (401), never sent again.
   */
  async authorization(t: OAuthTarget, refused?: string): Promise<string> {
    this.assertBound(t);
    // Every HTTP request to the server asks: a cached token costs a map lookup, nothing more.
    const issuer = issuerOf(t.auth, t.state);
    const hit = issuer ? this.cache.get(cacheKey(t, issuer)) : undefined;
    if (hit && fresh(hit) && hit.access_token !== refused) return `Bearer ${hit.access_token}`;
    if (refused && issuer && hit?.access_token === refused) this.cache.delete(cacheKey(t, issuer));
    const key = `${holderOf(t)}\u0001${refused ?? ''}`;
    let p = this.pending.get(key);
    if (!p) {
      p = this.obtain(t, this.provider(t), refused).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return p;
  }

  /**
   * The server answered a request with a challenge (401 or 403 + WWW-Authenticate): the
   * Authorization value to retry it once with, or a typed error. 401: the token sent was refused —
   * refreshed (or a new client-credentials grant), else the server needs authorizing again.
   * 403 insufficient_scope: step-up — a new authorization for the scope asked (client credentials:
   * a new grant), unless the token already holds that scope (never a loop).
   */
  async challenge(t: OAuthTarget, res: Response, sent: string | undefined): Promise<string> {
    const { scope, error } = extractWWWAuthenticateParams(res);
    const sentToken = sent?.replace(/^Bearer\s+/i, '');
    if (res.status === 401) return this.authorization(t, sentToken);
    if (error !== 'insufficient_scope') {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        `MCP server ${t.name} refused its OAuth token (403${error ? ` ${error}` : ''})`,
        { server_id: t.serverId },
        false,
      );
    }
    return this.stepUp(t, scope, sentToken);
  }

  private async stepUp(t: OAuthTarget, asked: string | undefined, sentToken: string | undefined): Promise<string> {
    const current = this.provider(t);
    const issuer = current.issuer();
    const stored = issuer ? await this.store.fetch(t.orgId, t.serverId, issuer, t.userId) : null;
    if (issuer && stored && fresh(stored) && stored.access_token !== sentToken) {
      // A newer token exists (the step-up was completed, maybe on another replica): use it.
      this.cache.set(cacheKey(t, issuer), stored);
      this.awaiting.delete(holderOf(t));
      return `Bearer ${stored.access_token}`;
    }
    const held = issuer ? (this.cache.get(cacheKey(t, issuer)) ?? stored) : null;
    const granted = held && held.access_token === sentToken ? (held.scope ?? '') : '';
    const want = [...new Set([...granted.split(' '), ...(asked ?? '').split(' ')].filter(Boolean))].join(' ');
    if (asked && held?.scope && asked.split(' ').every((s) => held.scope!.split(' ').includes(s))) {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        `MCP server ${t.name} asks for scope "${asked}", which its token already holds: not authorizing again`,
        { server_id: t.serverId, scope: asked },
        false,
      );
    }
    const waiting = this.stillAwaiting(holderOf(t), 'step_up', want || null);
    if (waiting) throw waiting;
    const provider = this.provider(t, undefined, { ...(want ? { scope: want } : {}), ignoreTokens: true });
    const result = await this.run(t, provider, want ? { scope: want } : {});
    if (result === 'REDIRECT') return this.required(t, provider, 'step_up', want || null, held !== null);
    const now = provider.issuer();
    const tokens = now ? this.cache.get(cacheKey(t, now)) : undefined;
    if (!tokens) throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'The OAuth flow ended without a token');
    return `Bearer ${tokens.access_token}`;
  }

  /** A started authorization the user must finish: kept (listener), then MCP_AUTHORIZATION_REQUIRED with its URL. */
  private async required(
    t: OAuthTarget,
    provider: McpOAuthProvider,
    reason: 'reauthorize' | 'step_up',
    scope: string | null,
    hadTokens = false,
  ): Promise<never> {
    const url = provider.authorizationUrl;
    const verifier = provider.pkceVerifier;
    if (!this.requiredListener || !url || !verifier) {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_REAUTHORIZE,
        'The MCP server has no usable OAuth token: authorize it again',
        { server_id: t.serverId },
        false,
      );
    }
    const started = { url, state: provider.state(), verifier };
    const { expiresAt } = await this.requiredListener({ target: t, started, reason, scope });
    // A user's connection that worked and no longer does: their agent runtime can ask them to reconnect.
    if (t.userId && hadTokens)
      void this.events.publish('expired', {
        orgId: t.orgId,
        userId: t.userId,
        serverId: t.serverId,
        serverName: t.name,
      });
    const why = reason === 'step_up' ? `asks for more scope (${scope ?? 'unnamed'})` : 'has no usable OAuth token';
    const error = new ToolplaneError(
      ErrorCode.MCP_AUTHORIZATION_REQUIRED,
      `MCP server ${t.name} ${why}: open the authorization URL, then call mcp.oauth.complete with the code`,
      {
        server_id: t.serverId,
        server_name: t.name,
        reason,
        authorization_url: url.href,
        state: started.state,
        expires_at: expiresAt,
        scope,
      },
      false,
    );
    if (this.awaiting.size >= MAX_AWAITING) this.pruneAwaiting();
    this.awaiting.set(holderOf(t), { reason, scope, expiresAt: Date.parse(expiresAt), error });
    throw error;
  }

  /** Expired waits go (one per user asked to connect: many users, most never back). */
  private pruneAwaiting(): void {
    const now = Date.now();
    for (const [k, a] of this.awaiting) if (a.expiresAt <= now) this.awaiting.delete(k);
  }

  /** The authorization this server already waits for (same reason and scope, not expired), if any. */
  private stillAwaiting(
    holder: string,
    reason: 'reauthorize' | 'step_up',
    scope: string | null,
  ): ToolplaneError | undefined {
    const a = this.awaiting.get(holder);
    if (!a) return undefined;
    if (a.expiresAt <= Date.now()) {
      this.awaiting.delete(holder);
      return undefined;
    }
    return a.reason === reason && a.scope === scope ? a.error : undefined;
  }

  /**
   * Starts an authorization-code flow (discovering and registering as needed): the URL the user
   * opens. Client credentials need no user: their token is obtained here and null is returned.
   */
  async begin(t: OAuthTarget): Promise<StartedAuthorization | null> {
    const provider = this.provider(t);
    const hint = provider.issuer() ? {} : await this.probe(t);
    const result = await this.run(t, provider, { ...hint, ...(t.auth.scope ? { scope: t.auth.scope } : {}) });
    if (result === 'AUTHORIZED') return null;
    const url = provider.authorizationUrl;
    if (!url || !provider.pkceVerifier)
      throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'The OAuth flow asked for no authorization URL');
    return { url, state: provider.state(), verifier: provider.pkceVerifier };
  }

  /** Authorization code + PKCE verifier → tokens, stored before they are used. */
  async exchange(t: OAuthTarget, code: string, verifier: string): Promise<void> {
    this.assertBound(t);
    const provider = this.provider(t, verifier);
    await this.run(t, provider, { authorizationCode: code });
    this.awaiting.delete(holderOf(t));
  }

  /** Memory only (after an update, or one user's revocation): the stored tokens stay bound to their issuer. */
  forget(serverId: string, userId?: string): void {
    const prefix = userId ? `${holderOf({ serverId, userId })}\u0001` : `${serverId}\u0000`;
    for (const k of this.cache.keys())
      if (k.startsWith(prefix) || (!userId && k.startsWith(`${serverId}\u0001`))) this.cache.delete(k);
    if (userId) this.awaiting.delete(holderOf({ serverId, userId }));
  }

  /**
   * RFC 7009: asks the authorization server to revoke these tokens (the refresh token, which takes
   * its access tokens with it, else the access token), through the SSRF policy, authenticated as
   * the registered client. `unsupported` when its metadata names no revocation endpoint.
   */
  async revoke(t: OAuthTarget, tokens: OAuthTokenSet): Promise<'revoked' | 'unsupported' | 'failed'> {
    const endpoint = (t.state.discovery?.authorizationServerMetadata as { revocation_endpoint?: unknown } | undefined)
      ?.revocation_endpoint;
    if (typeof endpoint !== 'string' && endpoint !== undefined) return 'unsupported';
    if (!endpoint) return 'unsupported';
    const client = this.provider(t).clientInformation();
    const form = new URLSearchParams(
      tokens.refresh_token
        ? { token: tokens.refresh_token, token_type_hint: 'refresh_token' }
        : { token: tokens.access_token, token_type_hint: 'access_token' },
    );
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (client?.client_secret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
    else if (client) form.set('client_id', client.client_id);
    try {
      const res = await this.fetchFn(endpoint, {
        method: 'POST',
        headers,
        body: form.toString(),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status === 200 ? 'revoked' : 'failed';
    } catch (e) {
      this.log.warn(
        `revocation at ${new URL(endpoint).origin} for MCP server ${t.serverId} failed: ${(e as Error).message}`,
      );
      return 'failed';
    }
  }

  private async obtain(t: OAuthTarget, provider: McpOAuthProvider, refused?: string): Promise<string> {
    const issuer = provider.issuer();
    let stored: OAuthTokenSet | null = null;
    if (issuer) {
      stored = await this.store.fetch(t.orgId, t.serverId, issuer, t.userId);
      if (stored && fresh(stored) && stored.access_token !== refused) {
        this.cache.set(cacheKey(t, issuer), stored);
        this.awaiting.delete(holderOf(t)); // authorized meanwhile (here or on another replica)
        return `Bearer ${stored.access_token}`;
      }
    }
    const waiting = this.stillAwaiting(holderOf(t), 'reauthorize', t.auth.scope ?? null);
    if (waiting) throw waiting;
    const hint = issuer ? {} : await this.probe(t);
    let result: 'AUTHORIZED' | 'REDIRECT';
    try {
      result = await this.run(t, provider, { ...hint, ...(t.auth.scope ? { scope: t.auth.scope } : {}) });
    } catch (e) {
      if (!provider.rediscoverable() || (e instanceof ToolplaneError && NO_REDISCOVERY_CODES.has(e.code))) throw e;
      // What discovery found earlier may be out of date (an endpoint moved): discover again, once.
      this.log.log(
        `OAuth for MCP server ${t.name} (${t.serverId}) failed with what was discovered earlier (${(e as Error).message}): discovering again`,
      );
      provider.invalidateCredentials('discovery');
      result = await this.run(t, provider, {
        ...(await this.probe(t)),
        ...(t.auth.scope ? { scope: t.auth.scope } : {}),
      });
    }
    if (result === 'REDIRECT') return this.required(t, provider, 'reauthorize', t.auth.scope ?? null, stored !== null);
    const now = provider.issuer();
    const tokens = now ? this.cache.get(cacheKey(t, now)) : undefined;
    if (!tokens) throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'The OAuth flow ended without a token');
    return `Bearer ${tokens.access_token}`;
  }

  /** The SDK's auth() with this service's fetch; its errors become typed ones. State changes are persisted. */
  private async run(
    t: OAuthTarget,
    provider: McpOAuthProvider,
    opts: { authorizationCode?: string; scope?: string; resourceMetadataUrl?: URL },
  ): Promise<'AUTHORIZED' | 'REDIRECT'> {
    try {
      return await sdkAuth(provider, { serverUrl: t.url, fetchFn: this.fetchFn, ...opts });
    } catch (e) {
      throw this.typed(e, t);
    } finally {
      if (provider.changed && this.stateListener) {
        await this.stateListener(t).catch((e: Error) =>
          this.log.warn(`could not keep the OAuth state of MCP server ${t.serverId}: ${e.message}`),
        );
      }
    }
  }

  /**
   * What the server says to a client without a token, as the MCP spec has a client learn it: a
   * session is opened and its tools listed without Authorization; the first 401/403 challenge
   * (WWW-Authenticate) gives the Protected Resource Metadata URL and the scope wanted.
   */
  private async probe(t: OAuthTarget): Promise<{ resourceMetadataUrl?: URL; scope?: string }> {
    let hint: { resourceMetadataUrl?: URL; scope?: string } | undefined;
    const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const res = await this.http.fetch(input, init);
      if (!hint && (res.status === 401 || res.status === 403)) {
        const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
        hint = { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
      }
      return res;
    };
    const url = new URL(t.url);
    const transport =
      t.transport === 'sse'
        ? new SSEClientTransport(url, { fetch: fetchFn })
        : new StreamableHTTPClientTransport(url, {
            fetch: fetchFn,
            reconnectionOptions: {
              maxRetries: 0,
              initialReconnectionDelay: 1000,
              maxReconnectionDelay: 1000,
              reconnectionDelayGrowFactor: 1,
            },
          });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const deadline = AbortSignal.timeout(this.timeoutMs);
    try {
      await client.connect(transport, { timeout: this.timeoutMs, signal: deadline });
      if (!hint) await client.listTools(undefined, { timeout: this.timeoutMs, signal: deadline });
    } catch (e) {
      const cause = (e as { cause?: unknown })?.cause;
      if (e instanceof ToolplaneError) throw e;
      if (cause instanceof ToolplaneError) throw cause;
      // A challenge (or a server that needs no token): what it said is the hint.
    } finally {
      await client.close().catch(() => undefined);
    }
    return hint ?? {};
  }

  private provider(
    t: OAuthTarget,
    verifier?: string,
    extra: { scope?: string; ignoreTokens?: boolean } = {},
  ): McpOAuthProvider {
    return new McpOAuthProvider({
      ...extra,
      auth: t.auth,
      state: t.state,
      redirectUri: t.auth.redirect_uri ?? this.config.MCP_OAUTH_REDIRECT_URI,
      ...(this.config.MCP_OAUTH_CLIENT_METADATA_URL
        ? { clientMetadataUrl: this.config.MCP_OAUTH_CLIENT_METADATA_URL }
        : {}),
      ...(verifier ? { verifier } : {}),
      tokens: {
        load: async (issuer) => {
          const set =
            this.cache.get(cacheKey(t, issuer)) ??
            (await this.store.fetch(t.orgId, t.serverId, issuer, t.userId)) ??
            undefined;
          return set ? toSdk(set, issuer) : undefined;
        },
        save: async (issuer, tokens) => {
          const set = fromSdk(tokens);
          this.cache.set(cacheKey(t, issuer), set);
          try {
            await this.store.store(t.orgId, t.serverId, issuer, set, t.userId);
            // A user's tokens renewed without them (a code exchange is announced by mcp.oauth.complete).
            if (t.userId && !verifier)
              void this.events.publish('refreshed', {
                orgId: t.orgId,
                userId: t.userId,
                serverId: t.serverId,
                serverName: t.name,
              });
          } catch (e) {
            if (grantOf(t.auth) === 'authorization_code') throw e;
            // A client-credentials token works without being stored: kept in memory, stored next time.
            this.log.warn(`could not store the OAuth tokens of MCP server ${t.serverId}: ${(e as Error).message}`);
          }
        },
      },
    });
  }

  /** Tokens obtained for one resource are never sent to another: a server whose URL moved is authorized again. */
  private assertBound(t: OAuthTarget): void {
    const bound = t.state.resource;
    if (bound && !coversServer(bound, t.url)) {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_REAUTHORIZE,
        `The server's OAuth tokens are for ${bound}, not ${canonicalResource(t.url).href}: authorize it again`,
        { server_id: t.serverId },
        false,
      );
    }
  }

  private typed(e: unknown, t: OAuthTarget): ToolplaneError {
    if (e instanceof ToolplaneError) return e;
    const where = new URL(t.url).origin;
    if (e instanceof InvalidGrantError) {
      return new ToolplaneError(
        ErrorCode.MCP_OAUTH_REAUTHORIZE,
        `The authorization server refused the grant (${e.message}): authorize the server again`,
        { server_id: t.serverId },
        { retryable: false, cause: e },
      );
    }
    if (e instanceof OAuthError) {
      const why = withoutRawBody(e.message);
      return new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        `OAuth for ${where} failed: ${e.errorCode}${why ? `: ${why}` : ''}`,
        { server_id: t.serverId },
        { retryable: false, cause: e },
      );
    }
    const cause = (e as { cause?: unknown })?.cause;
    if (cause instanceof ToolplaneError) return cause;
    if (e instanceof TypeError || (e as { name?: string })?.name === 'TimeoutError') {
      return new ToolplaneError(
        ErrorCode.MCP_CONNECTION_FAILED,
        `OAuth request for ${where} failed: ${(e as Error).message}${cause instanceof Error ? ` (${cause.message})` : ''}`,
        { server_id: t.serverId },
        { cause: e },
      );
    }
    return new ToolplaneError(
      ErrorCode.MCP_OAUTH_FAILED,
      `OAuth for ${where} failed: ${withoutRawBody((e as Error)?.message ?? String(e))}`,
      { server_id: t.serverId },
      { retryable: false, cause: e },
    );
  }
}

/**
 * An SDK error message without the response body it may quote ("Raw body: …"): an authorization
 * server that echoes its request would put a client secret, code or refresh token there.
 */
function withoutRawBody(message: string): string {
  return message.replace(/\.?\s*Raw body:[\s\S]*$/, '').slice(0, 500);
}

/** Whose tokens: the server's (the org's), or one end user's of it. */
function holderOf(t: { serverId: string; userId?: string }): string {
  return t.userId ? `${t.serverId}\u0000user\u0000${t.userId}` : t.serverId;
}

function cacheKey(t: { serverId: string; userId?: string }, issuer: string): string {
  return `${holderOf(t)}\u0001${issuer}`;
}

function toSdk(t: OAuthTokenSet, issuer: string): SdkTokens {
  return {
    access_token: t.access_token,
    token_type: 'Bearer',
    ...(t.refresh_token ? { refresh_token: t.refresh_token } : {}),
    ...(t.scope ? { scope: t.scope } : {}),
    ...(t.expires_at !== null ? { expires_in: Math.max(0, Math.floor((t.expires_at - Date.now()) / 1000)) } : {}),
    issuer,
  } as SdkTokens;
}

function fromSdk(t: SdkTokens): OAuthTokenSet {
  const now = Date.now();
  return {
    access_token: t.access_token,
    refresh_token: t.refresh_token ?? null,
    issued_at: now,
    // No lifetime given: assume an hour (and refresh then).
    expires_at: now + (typeof t.expires_in === 'number' && t.expires_in > 0 ? t.expires_in : 3600) * 1000,
    scope: t.scope ?? null,
  };
}

/** Usable for a while yet: refresh once less than a fifth of the lifetime (at most 60 s) remains. */
function fresh(t: OAuthTokenSet): boolean {
  if (t.expires_at === null) return true;
  return t.expires_at - Date.now() > Math.min(60_000, (t.expires_at - t.issued_at) / 5);
}
