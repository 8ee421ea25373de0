interface Entry<V> {
  value: V;
  expires: number;
  part?: string;
}

/**
 * An in-memory cache partitioned by org (entries never cross orgs), with per-entry TTLs and a
 * bound on the total entry count (reaching it clears everything). `forget(org)` drops an org and
 * bumps its version, `clear()` drops all orgs and bumps every version: a value loaded under an
 * older version (`versionOf` taken before the load) is not stored by `set`, so a load that raced
 * a change is used once and not kept.
 *
 * An entry may also belong to a part of its org (e.g. one agent): `forget(org, part)` drops only
 * that part's entries and bumps only its version (`versionOf(org, part)` covers both the org's
 * and the part's), so a change to one part leaves the org's other parts cached.
 */
export class OrgScopedCache<V> {
  private readonly orgs = new Map<string, Map<string, Entry<V>>>();
  private readonly versions = new Map<string, number>();
  /** org → part → its version, and the keys it holds. Dropped with the org's version bump (the org's part of a version string changes then). */
  private readonly parts = new Map<string, Map<string, { version: number; keys: Set<string> }>>();
  private partCount = 0;
  private epoch = 0;
  private size = 0;

  constructor(private readonly maxEntries: number) {}

  /** The unexpired entry of (org, key): `{ value }`, so that a cached `undefined` is a hit too. */
  get(orgId: string, key: string): { value: V } | undefined {
    const hit = this.orgs.get(orgId)?.get(key);
    return hit && hit.expires > Date.now() ? hit : undefined;
  }

  versionOf(orgId: string, part?: string): string {
    const org = `${this.epoch}:${this.versions.get(orgId) ?? 0}`;
    return part === undefined ? org : `${org}:${this.parts.get(orgId)?.get(part)?.version ?? 0}`;
  }

  /**
   * Stores the value for ttlMs, unless the org (or its part) changed since `loadedAt` (its
   * versionOf before the load, with the same part) or ttlMs ≤ 0.
   */
  set(orgId: string, key: string, value: V, ttlMs: number, loadedAt: string, part?: string): void {
    if (ttlMs <= 0 || this.versionOf(orgId, part) !== loadedAt) return;
    if (this.size >= this.maxEntries || this.partCount >= this.maxEntries) this.clear();
    let entries = this.orgs.get(orgId);
    if (!entries) {
      entries = new Map();
      this.orgs.set(orgId, entries);
    }
    if (!entries.has(key)) this.size++;
    entries.set(key, { value, expires: Date.now() + ttlMs, ...(part === undefined ? {} : { part }) });
    if (part !== undefined) this.partOf(orgId, part).keys.add(key);
  }

  /** Drops the org's entries (or only its part's) and bumps the version loads of them were taken under. */
  forget(orgId: string, part?: string): void {
    if (part !== undefined) return this.forgetPart(orgId, part);
    this.versions.set(orgId, (this.versions.get(orgId) ?? 0) + 1);
    this.partCount -= this.parts.get(orgId)?.size ?? 0;
    this.parts.delete(orgId);
    const entries = this.orgs.get(orgId);
    if (!entries) return;
    this.size -= entries.size;
    this.orgs.delete(orgId);
  }

  clear(): void {
    this.epoch++;
    this.orgs.clear();
    this.parts.clear();
    this.partCount = 0;
    this.size = 0;
  }

  private forgetPart(orgId: string, part: string): void {
    const p = this.partOf(orgId, part);
    p.version++;
    const entries = this.orgs.get(orgId);
    for (const key of p.keys) if (entries?.get(key)?.part === part && entries.delete(key)) this.size--;
    p.keys.clear();
  }

  private partOf(orgId: string, part: string): { version: number; keys: Set<string> } {
    let parts = this.parts.get(orgId);
    if (!parts) {
      parts = new Map();
      this.parts.set(orgId, parts);
    }
    let p = parts.get(part);
    if (!p) {
      p = { version: 0, keys: new Set() };
      parts.set(part, p);
      this.partCount++;
    }
    return p;
  }
}
