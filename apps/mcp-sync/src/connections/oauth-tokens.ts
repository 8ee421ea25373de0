import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpAuthInput, type OAuthTokenSet } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { createHash, randomBytes } from 'node:crypto';
import type { McpSyncConfig } from '../mcp-sync.config';
import { OAuthTokenStore } from './oauth-token-store';
import { PinnedHttp } from './pinned-http';
import { UrlGuard } from './url-guard';

/** An OAuth server auth with its client_secret template already resolved. */
export type OAuthAuth = Extract<McpAuthInput, { type: 'oauth' }>;

/** PKCE (RFC 7636, S256): a fresh verifier and its challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** How long a token endpoint's vetted addresses are reused before its name is resolved again. */
const TOKEN_HOST_PIN_MS = 60_000;

/**
 * OAuth 2.1 tokens of MCP servers. Stored by the credentials service per (org, server, issuer =
 * token endpoint), so a token is only ever sent to the server it was obtained for and survives
 * restarts; a copy is kept in memory. Refreshed before expiry (refresh_token grant when there is
 * one, else a new client-credentials grant); an authorization-code server whose refresh fails
 * must be authorized again (MCP_OAUTH_REAUTHORIZE).
 */
@Injectable()
export class OAuthTokens implements OnModuleDestroy {
  private readonly log = new Logger(OAuthTokens.name);
  private readonly cache = new Map<string, OAuthTokenSet>();
  private readonly pending = new Map<string, Promise<OAuthTokenSet>>();
  /** Token requests connect only to the vetted addresses of the token endpoint (no DNS rebinding). */
  private readonly http: PinnedHttp;
  private readonly timeoutMs: number;

  constructor(
    private readonly store: OAuthTokenStore,
    @Inject(APP_CONFIG) config: McpSyncConfig,
  ) {
    const guard = new UrlGuard({ profile: config.TOOLPLANE_PROFILE, allowed: config.MCP_ALLOWED_HOSTS });
    this.http = new PinnedHttp(guard, { ttlMs: TOKEN_HOST_PIN_MS, connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS });
    this.timeoutMs = config.MCP_CONNECT_TIMEOUT_MS;
  }

  async onModuleDestroy(): Promise<void> {
    await this.http.close();
  }

  /** The Authorization header value for a request to the server: a fresh access token. */
  async authorization(orgId: string, serverId: string, auth: OAuthAuth): Promise<string> {
    const key = `${serverId}\u0000${auth.token_url}\u0000${auth.client_id}`;
    const hit = this.cache.get(key);
    if (hit && fresh(hit)) return `Bearer ${hit.access_token}`;
    let p = this.pending.get(key);
    if (!p) {
      p = this.obtain(orgId, serverId, auth, hit).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    const tokens = await p;
    this.cache.set(key, tokens);
    return `Bearer ${tokens.access_token}`;
  }

  /** Authorization code + PKCE verifier → tokens, stored before they are used. */
  async exchangeCode(orgId: string, serverId: string, auth: Extract<OAuthAuth, { grant_type: 'authorization_code' }>, code: string, verifier: string): Promise<void> {
    const tokens = await this.grant(auth, { grant_type: 'authorization_code', code, redirect_uri: auth.redirect_uri, code_verifier: verifier }, null, ErrorCode.MCP_OAUTH_FAILED);
    await this.store.store(orgId, serverId, auth.token_url, tokens);
  }

  /** Memory only (after an update): the stored tokens stay bound to their issuer. */
  forget(serverId: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${serverId}\u0000`)) this.cache.delete(k);
  }

  private async obtain(orgId: string, serverId: string, auth: OAuthAuth, cached: OAuthTokenSet | undefined): Promise<OAuthTokenSet> {
    const stored = (await this.store.fetch(orgId, serverId, auth.token_url)) ?? cached ?? null;
    if (stored && fresh(stored)) return stored;
    let next: OAuthTokenSet | undefined;
    if (stored?.refresh_token) {
      try {
        next = await this.grant(auth, { grant_type: 'refresh_token', refresh_token: stored.refresh_token }, stored.refresh_token, ErrorCode.MCP_OAUTH_REAUTHORIZE);
      } catch (e) {
        if (auth.grant_type === 'authorization_code') throw e;
        this.log.warn(`refreshing the OAuth token of MCP server ${serverId} failed (${(e as Error).message}); requesting a new one`);
      }
    }
    if (!next) {
      if (auth.grant_type === 'authorization_code') {
        throw new ToolplaneError(ErrorCode.MCP_OAUTH_REAUTHORIZE, 'The MCP server has no usable OAuth token: authorize it again (servers.update with its auth, then mcp.oauth.complete)', { server_id: serverId }, false);
      }
      next = await this.grant(auth, { grant_type: 'client_credentials', ...(auth.scope ? { scope: auth.scope } : {}) }, null, ErrorCode.MCP_CONNECTION_FAILED);
    }
    try {
      await this.store.store(orgId, serverId, auth.token_url, next);
    } catch (e) {
      // The token works; keep it in memory and store it on the next refresh.
      this.log.warn(`could not store the OAuth tokens of MCP server ${serverId}: ${(e as Error).message}`);
    }
    return next;
  }

  /** One token request; client authentication by HTTP Basic when there is a secret, else client_id in the body (public client). */
  private async grant(auth: OAuthAuth, params: Record<string, string>, keepRefresh: string | null, refusedCode: ErrorCode): Promise<OAuthTokenSet> {
    await this.http.vet(auth.token_url);
    const secret = auth.client_secret;
    const body = new URLSearchParams({ ...params, ...(secret ? {} : { client_id: auth.client_id }) });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (secret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(auth.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const origin = new URL(auth.token_url).origin;
    let res: Response;
    try {
      res = await this.http.fetch(auth.token_url, { method: 'POST', headers, body, redirect: 'error', signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (e) {
      throw new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `OAuth token request to ${origin} failed: ${(e as Error).message}`);
    }
    const json = (await res.json().catch(() => ({}))) as { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown; scope?: unknown; error?: unknown };
    if (!res.ok || typeof json.access_token !== 'string') {
      const why = typeof json.error === 'string' ? json.error : `HTTP ${res.status}`;
      throw new ToolplaneError(refusedCode, `OAuth token request (${params.grant_type}) to ${origin} was refused: ${why}`, undefined, false);
    }
    const now = Date.now();
    return {
      access_token: json.access_token,
      refresh_token: typeof json.refresh_token === 'string' ? json.refresh_token : keepRefresh,
      issued_at: now,
      // No lifetime given: assume an hour (and refresh then).
      expires_at: now + (typeof json.expires_in === 'number' && json.expires_in > 0 ? json.expires_in : 3600) * 1000,
      scope: typeof json.scope === 'string' ? json.scope : null,
    };
  }
}

/** Usable for a while yet: refresh once less than a fifth of the lifetime (at most 60 s) remains. */
function fresh(t: OAuthTokenSet): boolean {
  if (t.expires_at === null) return true;
  return t.expires_at - Date.now() > Math.min(60_000, (t.expires_at - t.issued_at) / 5);
}
