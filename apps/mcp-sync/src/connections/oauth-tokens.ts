import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import type { UrlGuard } from './url-guard';

export interface ClientCredentials {
  token_url: string;
  client_id: string;
  client_secret: string;
  scope?: string;
}

interface Cached {
  accessToken: string;
  expiresAt: number;
  lifetimeMs: number;
}

/**
 * OAuth 2.1 client-credentials tokens, kept in memory only, per server and issuer (a token is
 * never sent anywhere but the server it was obtained for), refreshed before they expire.
 */
export class OAuthTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly pending = new Map<string, Promise<Cached>>();

  constructor(
    private readonly guard: UrlGuard,
    private readonly timeoutMs: number,
  ) {}

  async authorization(serverId: string, cc: ClientCredentials): Promise<string> {
    const key = `${serverId}\u0000${cc.token_url}\u0000${cc.client_id}`;
    const hit = this.cache.get(key);
    // Refresh when less than a fifth of the lifetime (at most 60 s) remains.
    if (hit && hit.expiresAt - Date.now() > Math.min(60_000, hit.lifetimeMs / 5)) return `Bearer ${hit.accessToken}`;
    let p = this.pending.get(key);
    if (!p) {
      p = this.fetchToken(cc).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    const fresh = await p;
    this.cache.set(key, fresh);
    return `Bearer ${fresh.accessToken}`;
  }

  forget(serverId: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${serverId}\u0000`)) this.cache.delete(k);
  }

  private async fetchToken(cc: ClientCredentials): Promise<Cached> {
    await this.guard.check(cc.token_url);
    const body = new URLSearchParams({ grant_type: 'client_credentials', ...(cc.scope ? { scope: cc.scope } : {}) });
    const basic = Buffer.from(`${encodeURIComponent(cc.client_id)}:${encodeURIComponent(cc.client_secret)}`).toString('base64');
    let res: Response;
    try {
      res = await fetch(cc.token_url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `OAuth token request to ${new URL(cc.token_url).origin} failed: ${(e as Error).message}`);
    }
    const json = (await res.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown; token_type?: unknown; error?: unknown };
    if (!res.ok || typeof json.access_token !== 'string') {
      const why = typeof json.error === 'string' ? json.error : `HTTP ${res.status}`;
      throw new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `OAuth token request to ${new URL(cc.token_url).origin} was refused: ${why}`, undefined, false);
    }
    const lifetimeMs = (typeof json.expires_in === 'number' && json.expires_in > 0 ? json.expires_in : 3600) * 1000;
    return { accessToken: json.access_token, expiresAt: Date.now() + lifetimeMs, lifetimeMs };
  }
}
