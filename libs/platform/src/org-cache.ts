interface Entry<V> {
  value: V;
  expires: number;
  part?: string;
}

/** A load in flight: shared by every caller of its key until it settles; `stale` once its key, part or org was forgotten. */
interface Loading<V> {
  promise: Promise<V>;
  stale: boolean;
  /** The part the entry was asked for under (undefined: none known before the load). */
  part?: string;
}

export interface LoadOptions<V> {
  /** How long the loaded value is kept (0: not kept); a function decides per value (e.g. misses not kept). */
  ttlMs: number | ((value: V) => number);
  /** The part of the org the entry belongs to, when known before the load. */
  part?: string;
  /** The part, known only from the loaded value (e.g. a tool looked up by name belongs to its id). */
  partOf?: (value: V) => string | undefined;
}

/**
 * The one in-memory cache of Toolplane's services: partitioned by org (entries never cross orgs),
 * with per-entry TTLs and a bound on the total entry count (reaching it clears everything).
 * `forget(org)` drops an org and bumps its version, `clear()` drops all orgs and bumps every
 * version: a value loaded under an older version (`versionOf` taken before the load) is not stored
 * by `set`, so a load that raced a change is used once and not kept.
 *
 * An entry may also belong to a part of its org (e.g. one agent, one tool): `forget(org, part)`
 * drops only that part's entries and bumps only its version (`versionOf(org, part)` covers both
 * the org's and the part's), so a change to one part leaves the org's other parts cached.
 * `forgetKey(org, key)` drops one entry.
 *
 * `load` is the read-through path: concurrent callers of one (org, key) share one load, and a load
 * that raced a forget of its key, its part or its org answers its callers but is not stored (the
 * next caller loads again), so an update racing a lookup can never leave the old value cached.
 */
export class OrgScopedCache<V> {
  private readonly orgs = new Map<string, Map<string, Entry<V>>>();
  private readonly versions = new Map<string, number>();
  /** org → part → its version, and the keys it holds. Dropped with the org's version bump (the org's part of a version string changes then). */
  private readonly parts = new Map<string, Map<string, { version: number; keys: Set<string> }>>();
  private partCount = 0;
  private epoch = 0;
  private size = 0;
  /** org → key → the load in flight. */
  private readonly loading = new Map<string, Map<string, Loading<V>>>();

  constructor(private readonly maxEntries: number) {}

  /**
   * The cached value of (org, key), else the value `loader` gives — one load for every concurrent
   * caller of the key — kept for `ttlMs` unless the key, its part or its org was forgotten while
   * it loaded. A failed load is not kept; every caller waiting on it gets its error.
   */
  async load(
    orgId: string,
    key: string,
    loader: () => Promise<V>,
    opts: LoadOptions<V>,
  ): Promise<{ value: V; cached: boolean }> {
    const hit = this.get(orgId, key);
    if (hit) return { value: hit.value, cached: true };
    let inOrg = this.loading.get(orgId);
    const running = inOrg?.get(key);
    if (running) return { value: await running.promise, cached: false };
    const version = this.versionOf(orgId, opts.part);
    const rec: Loading<V> = {
      promise: undefined as unknown as Promise<V>,
      stale: false,
      ...(opts.part === undefined ? {} : { part: opts.part }),
    };
    rec.promise = (async () => {
      try {
        const value = await loader();
        const ttl = typeof opts.ttlMs === 'function' ? opts.ttlMs(value) : opts.ttlMs;
        const part = opts.part ?? opts.partOf?.(value);
        // The part learnt from the value: its version must not have moved either (checked below through `stale`).
        if (!rec.stale)
          this.set(
            orgId,
            key,
            value,
            ttl,
            opts.part === undefined && part !== undefined ? this.versionOf(orgId, part) : version,
            part,
          );
        return value;
      } finally {
        const m = this.loading.get(orgId);
        if (m?.get(key) === rec) {
          m.delete(key);
          if (!m.size) this.loading.delete(orgId);
        }
      }
    })();
    if (!inOrg) {
      inOrg = new Map();
      this.loading.set(orgId, inOrg);
    }
    inOrg.set(key, rec);
    return { value: await rec.promise, cached: false };
  }

  /** Drops one entry; a load of it in flight is not kept. */
  forgetKey(orgId: string, key: string): void {
    const entries = this.orgs.get(orgId);
    const e = entries?.get(key);
    if (e && entries!.delete(key)) {
      this.size--;
      if (e.part !== undefined) this.parts.get(orgId)?.get(e.part)?.keys.delete(key);
    }
    this.dropLoads(orgId, (k) => k === key);
  }

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
    this.dropLoads(orgId, () => true);
    this.versions.set(orgId, (this.versions.get(orgId) ?? 0) + 1);
    this.partCount -= this.parts.get(orgId)?.size ?? 0;
    this.parts.delete(orgId);
    const entries = this.orgs.get(orgId);
    if (!entries) return;
    this.size -= entries.size;
    this.orgs.delete(orgId);
  }

  clear(): void {
    for (const org of [...this.loading.keys()]) this.dropLoads(org, () => true);
    this.epoch++;
    this.orgs.clear();
    this.parts.clear();
    this.partCount = 0;
    this.size = 0;
  }

  private forgetPart(orgId: string, part: string): void {
    // Loads whose part is not known yet may belong to it: none of them is kept either.
    this.dropLoads(orgId, (_k, l) => l.part === undefined || l.part === part);
    const p = this.partOf(orgId, part);
    p.version++;
    const entries = this.orgs.get(orgId);
    for (const key of p.keys) if (entries?.get(key)?.part === part && entries.delete(key)) this.size--;
    p.keys.clear();
  }

  /** Loads in flight that a change made stale: they answer their callers, are not kept, and new callers load again. */
  private dropLoads(orgId: string, which: (key: string, l: Loading<V>) => boolean): void {
    const m = this.loading.get(orgId);
    if (!m) return;
    for (const [k, l] of m) {
      if (!which(k, l)) continue;
      l.stale = true;
      m.delete(k);
    }
    if (!m.size) this.loading.delete(orgId);
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
