interface Entry<V> {
  value: V;
  expires: number;
}

/**
 * An in-memory cache partitioned by org (entries never cross orgs), with per-entry TTLs and a
 * bound on the total entry count (reaching it clears everything). `forget(org)` drops an org and
 * bumps its version, `clear()` drops all orgs and bumps every version: a value loaded under an
 * older version (`versionOf` taken before the load) is not stored by `set`, so a load that raced
 * a change is used once and not kept.
 */
export class OrgScopedCache<V> {
  private readonly orgs = new Map<string, Map<string, Entry<V>>>();
  private readonly versions = new Map<string, number>();
  private epoch = 0;
  private size = 0;

  constructor(private readonly maxEntries: number) {}

  /** The unexpired entry of (org, key): `{ value }`, so that a cached `undefined` is a hit too. */
  get(orgId: string, key: string): { value: V } | undefined {
    const hit = this.orgs.get(orgId)?.get(key);
    return hit && hit.expires > Date.now() ? hit : undefined;
  }

  versionOf(orgId: string): string {
    return `${this.epoch}:${this.versions.get(orgId) ?? 0}`;
  }

  /** Stores the value for ttlMs, unless the org changed since `loadedAt` (its versionOf before the load) or ttlMs ≤ 0. */
  set(orgId: string, key: string, value: V, ttlMs: number, loadedAt: string): void {
    if (ttlMs <= 0 || this.versionOf(orgId) !== loadedAt) return;
    if (this.size >= this.maxEntries) this.dropAll();
    let entries = this.orgs.get(orgId);
    if (!entries) {
      entries = new Map();
      this.orgs.set(orgId, entries);
    }
    if (!entries.has(key)) this.size++;
    entries.set(key, { value, expires: Date.now() + ttlMs });
  }

  forget(orgId: string): void {
    this.versions.set(orgId, (this.versions.get(orgId) ?? 0) + 1);
    const entries = this.orgs.get(orgId);
    if (!entries) return;
    this.size -= entries.size;
    this.orgs.delete(orgId);
  }

  clear(): void {
    this.epoch++;
    this.dropAll();
  }

  private dropAll(): void {
    this.orgs.clear();
    this.size = 0;
  }
}
