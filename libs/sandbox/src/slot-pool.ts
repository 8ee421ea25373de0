import { Slot, type SlotSpawn } from './slot';

export interface PoolOptions {
  /** Slots per environment (calls of one environment served at once). */
  maxPerEnvironment: number;
  /** Slots across all environments: the memory budget (~10 MB each for a bare interpreter). */
  maxTotal: number;
  /** Slots kept ready for the default environment (no requirements, no network). */
  warm: number;
  /** Slots kept ready for the default environment with network (each serves one call). */
  warmNetwork: number;
  /** An idle slot is closed after this long (the default environment keeps `warm`). */
  idleTtlMs: number;
  /** Modules every slot imports before forking calls. */
  preload: string[];
}

/** What makes slots interchangeable: the same interpreter/virtualenv/node_modules, network, work-dir size. */
export interface PoolEnvironment {
  key: string;
  python: string;
  venvDir?: string;
  network: boolean;
  /** Size of each call's work dir: fixed per slot (its tmpfs is mounted before the call arrives). */
  workBytes: number;
  /** Node tools: the Node binary (host path) and the node_modules tree (host dir), if any. */
  node?: string;
  npmDir?: string;
}

export interface PoolStats {
  slots: number;
  idle: number;
  busy: number;
  environments: number;
  warmHits: number;
  warmMisses: number;
  slotsStarted: number;
  slotsKilled: number;
  /** Slots retired after a call because they could not prove themselves clean. */
  slotsDirty: number;
}

class Pool {
  readonly idle: Slot[] = [];
  readonly busy = new Set<Slot>();
  starting = 0;
  lastUsed = Date.now();
  constructor(readonly env: PoolEnvironment) {}
  get size(): number {
    return this.idle.length + this.busy.size + this.starting;
  }
}

/**
 * The slot pool: warm sandboxes per environment — acquire, release (reuse only a slot that proved
 * itself clean; a network-enabled slot serves one call and is replaced), keep the warm ones
 * ready, evict and reap idle ones. It knows how to start a slot only through `spawnFor`.
 *
 * It is not the remote runners' pool (libs/remote-runner `RemotePool`) and shares no code with it:
 * a slot here is a child process of this runner (forked per call, its pipes read, proved clean by
 * its own slot.py), bounded by a memory budget, with nothing to find again after a restart; the
 * remote pool's org bounds and fair places, adoption, lanes and drain-and-prove have no local
 * counterpart (libs/remote-runner/README.md, "Why libs/sandbox's SlotPool is not this pool").
 */
export class SlotPool {
  private readonly pools = new Map<string, Pool>();
  private readonly waiters: Array<() => void> = [];
  /** Configured warm environments: slots kept per environment key. */
  private readonly warmTargets = new Map<string, number>();
  private readonly counters = { warmHits: 0, warmMisses: 0, slotsStarted: 0, slotsKilled: 0, slotsDirty: 0 };
  private closed = false;
  private sweeper?: NodeJS.Timeout;

  constructor(
    readonly options: PoolOptions,
    private readonly spawnFor: (env: PoolEnvironment) => SlotSpawn,
  ) {}

  start(): void {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(this.options.idleTtlMs / 2, 30_000)));
    this.sweeper.unref();
  }

  stats(): PoolStats {
    let idle = 0;
    let busy = 0;
    let slots = 0;
    for (const p of this.pools.values()) {
      idle += p.idle.length;
      busy += p.busy.size;
      slots += p.size;
    }
    return { slots, idle, busy, environments: this.pools.size, ...this.counters };
  }

  /** Is a host dir (virtualenv, node_modules) used by a slot alive now? */
  uses(dir: string): boolean {
    for (const p of this.pools.values()) if (p.size > 0 && (p.env.venvDir === dir || p.env.npmDir === dir)) return true;
    return false;
  }

  setWarmTarget(key: string, warm: number): void {
    this.warmTargets.set(key, warm);
  }

  /** Starts one slot and parks it idle (the first slot of the runner: proves isolation works). */
  async prime(env: PoolEnvironment): Promise<Slot> {
    const pool = this.poolFor(env);
    const slot = await this.startSlot(pool);
    pool.idle.push(slot);
    return slot;
  }

  async acquire(env: PoolEnvironment): Promise<{ slot: Slot; warm: boolean; release: () => void }> {
    const pool = this.poolFor(env);
    pool.lastUsed = Date.now();
    for (;;) {
      if (this.closed) throw new Error('the sandbox driver is closed');
      const idle = takeIdle(pool.idle);
      if (idle) {
        if (idle.dead) continue;
        pool.busy.add(idle);
        this.counters.warmHits++;
        return { slot: idle, warm: true, release: () => this.release(pool, idle) };
      }
      if (
        pool.size < this.options.maxPerEnvironment &&
        (this.total() < this.options.maxTotal || (await this.evictIdle(pool)))
      ) {
        this.counters.warmMisses++;
        const slot = await this.startSlot(pool);
        pool.busy.add(slot);
        return { slot, warm: false, release: () => this.release(pool, slot) };
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  async warmUp(env: PoolEnvironment): Promise<void> {
    const pool = this.poolFor(env);
    // Warm slots count against the total budget like any other.
    const missing = Math.min(this.warmTarget(pool) - pool.size, this.options.maxTotal - this.total());
    const started = await Promise.allSettled(Array.from({ length: Math.max(0, missing) }, () => this.startSlot(pool)));
    for (const s of started) if (s.status === 'fulfilled') pool.idle.push(s.value);
    if (started.length) this.waiters.shift()?.();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    const all: Slot[] = [];
    for (const p of this.pools.values()) all.push(...p.idle.splice(0), ...p.busy);
    for (const w of this.waiters.splice(0)) w();
    await Promise.allSettled(all.map((s) => s.kill()));
  }

  private poolFor(env: PoolEnvironment): Pool {
    let p = this.pools.get(env.key);
    if (!p) {
      p = new Pool(env);
      this.pools.set(env.key, p);
    }
    return p;
  }

  private release(pool: Pool, slot: Slot): void {
    pool.busy.delete(slot);
    if (slot.dirty) this.counters.slotsDirty++;
    // A network-enabled slot serves one call: its namespace, its slirp4netns and any connection
    // state in them never meet another call.
    if (pool.env.network && !slot.dead) void slot.kill();
    if (slot.dead) {
      this.counters.slotsKilled++;
      if (this.warmTarget(pool) > 0 && !this.closed) void this.warmUp(pool.env);
    } else if (this.closed) {
      void slot.kill();
    } else {
      pool.idle.push(slot);
    }
    this.waiters.shift()?.();
  }

  private async startSlot(pool: Pool): Promise<Slot> {
    pool.starting++;
    try {
      const slot = new Slot(pool.env.key, this.spawnFor(pool.env));
      await slot.ready;
      this.counters.slotsStarted++;
      return slot;
    } finally {
      pool.starting--;
    }
  }

  /** Slots an environment keeps ready: `warm` / `warmNetwork` for the default one, its own number for a configured one. */
  private warmTarget(pool: Pool): number {
    const configured = this.warmTargets.get(pool.env.key);
    if (configured !== undefined) return configured;
    if (pool.env.key === 'default') return this.options.warm;
    if (pool.env.key === 'default+net') return this.options.warmNetwork;
    return 0;
  }

  private total(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.size;
    return n;
  }

  /** Closes the least recently used idle slot of another environment; false when none is idle. */
  private async evictIdle(except: Pool): Promise<boolean> {
    const candidates = [...this.pools.values()]
      .filter((p) => p !== except && p.idle.length > 0)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    const victim = candidates[0]?.idle.shift();
    if (!victim) return false;
    await victim.kill();
    return true;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, p] of this.pools) {
      const keep = this.warmTarget(p);
      p.idle.sort((a, b) => b.lastUsed - a.lastUsed);
      while (p.idle.length > keep && now - p.idle[p.idle.length - 1]!.lastUsed > this.options.idleTtlMs)
        void p.idle.pop()!.kill();
      if (p.size === 0 && keep === 0) this.pools.delete(key);
    }
  }
}

/**
 * The idle slot a call takes: the most recently used one whose next child is already confined,
 * warmed and waiting for its job (its memory is the likeliest still in the CPU caches: at low
 * concurrency a few slots take turns instead of the whole pool), else the one idle longest (its
 * child is the closest to ready; the slot used last is still forking and warming its next child).
 */
function takeIdle(idle: Slot[]): Slot | undefined {
  let pick = -1;
  for (let i = 0; i < idle.length; i++) {
    const s = idle[i]!;
    if (s.childReady && (pick < 0 || !idle[pick]!.childReady || s.lastUsed > idle[pick]!.lastUsed)) pick = i;
    else if (!s.childReady && (pick < 0 || (!idle[pick]!.childReady && s.lastUsed < idle[pick]!.lastUsed))) pick = i;
  }
  return pick < 0 ? undefined : idle.splice(pick, 1)[0];
}
