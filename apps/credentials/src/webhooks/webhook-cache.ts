interface Entry {
  env: Record<string, string>;
  expires: number;
}

/** Successful webhook replies by org/agent/tool, for the webhook's cache_ttl_ms. Failures are never cached. */
export class WebhookCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries: number) {}

  static key(orgId: string, agentId: string | undefined, toolId: string): string {
    return [orgId, agentId ?? '', toolId].join('\u0000');
  }

  get(key: string, now = Date.now()): Record<string, string> | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return e.env;
  }

  put(key: string, env: Record<string, string>, ttlMs: number, now = Date.now()): void {
    if (ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { env, expires: now + ttlMs });
  }

  /** Forget an org's entries (its webhook changed or was removed). */
  clearOrg(orgId: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(`${orgId}\u0000`)) this.entries.delete(k);
  }
}
