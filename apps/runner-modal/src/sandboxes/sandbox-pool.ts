import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { FairQueue } from '@toolplane/platform';
import type { Proof } from '@toolplane/sandbox';
import type { Sandbox } from 'modal';
import type { EnvironmentKeys, EnvironmentRequest, ModalSandboxes } from './environments';

/** One sandbox of the pool: leased to at most `calls_per_sandbox` calls at once (1 by default: never two). */
export class Slot {
  /** Calls running in it now. */
  active = 0;
  /** Calls it has served (the first is not a reuse). */
  served = 0;
  dead = false;
  /** Shared (calls_per_sandbox > 1): a call ended while others ran; no new call until it drained and proved itself clean. */
  draining = false;
  proving = false;
  lastUsed = Date.now();

  constructor(
    readonly sandbox: Sandbox,
    readonly env: PoolEnvironment,
    public proof: Proof,
    /** Node is in the image (TypeScript/JavaScript tools). */
    readonly node: boolean,
    /** Gives its place within MODAL_MAX_SANDBOXES(_PER_ORG) back. */
    readonly place: () => void,
  ) {}

  get id(): string {
    return this.sandbox.sandboxId;
  }

  get free(): boolean {
    return !this.dead && !this.draining && !this.proving && this.active < this.env.req.lanes;
  }
}

type Waiter = (slot: Slot | Error) => void;

/** The sandboxes of one (org, token, config fingerprint, image, calls_per_sandbox) and its waiting calls. */
export interface PoolEnvironment extends EnvironmentKeys {
  req: EnvironmentRequest;
  slots: Set<Slot>;
  /** Sandboxes being created for it (each holding its place). */
  creating: number;
  /** Places asked for in the bounds' queue (all sandboxes of the bounds exist): each becomes a create once granted. */
  queued: number;
  waiters: Waiter[];
  adopted?: Promise<void>;
  lastError?: Error;
  /** A newer config fingerprint of its family is in use: its sandboxes are terminated once idle. */
  retired?: boolean;
  /** prepare() is looking for earlier sandboxes before it creates one. */
  preparing?: boolean;
  /** Sandboxes its calls (running and waiting) needed at once lately, and when: the pool keeps that many for MODAL_IDLE_TTL_MS. */
  peak: number;
  peakAt: number;
}

export interface PoolOptions {
  /** Sandboxes alive or starting for one org (MODAL_MAX_SANDBOXES_PER_ORG). */
  maxPerOrg: number;
  /** Sandboxes alive or starting for all orgs together (MODAL_MAX_SANDBOXES): places go to waiting orgs in turn. */
  maxTotal: number;
  /** Idle sandboxes kept ready per environment ahead of demand. */
  warm: number;
  idleTtlMs: number;
  /** How often idle sandboxes are looked for (default: a quarter of the TTL, 250 ms to 5 s). */
  reapEveryMs?: number;
}

export interface PoolCounters {
  creates: number;
  /** Calls that found a free sandbox at once. */
  hits: number;
  /** Calls that found none and waited (for a sandbox being created, or one freed by another call). */
  coldStarts: number;
  /** Of those, calls served by a sandbox created for them (the rest got one another call freed). */
  createdFor: number;
  /** Sandboxes created ahead of demand because calls were waiting (more than one per waiting call). */
  surged: number;
  reuses: number;
  adopted: number;
  reaps: number;
  /** Times a sandbox creation waited for a place within MODAL_MAX_SANDBOXES(_PER_ORG). */
  boundWaits: number;
  kills: Map<string, number>;
}

/** A signal already aborted: a place is taken only when it is free at once. */
const AT_ONCE = AbortSignal.abort();

/**
 * The slot pool of runner-modal: warm sandboxes per environment, created ahead of demand (the
 * calls running and waiting, plus `warm` idle ones; twice the demand while calls wait; the recent
 * peak for a while), within a per-org and a global bound shared fairly between orgs (FairQueue: a
 * place that frees up goes to the waiting org served longest ago; an idle sandbox of another org is
 * terminated to make room), leased to `calls_per_sandbox` calls at once, kept only when the
 * launcher proved the calls left nothing behind, reaped when idle, retired when the org's config
 * changes (a newer fingerprint in the same family), adopted after a restart. Knows no NATS.
 */
export class SandboxPool {
  private readonly log = new Logger(SandboxPool.name);
  private readonly envs = new Map<string, PoolEnvironment>();
  private readonly places: FairQueue;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  readonly counters: PoolCounters = { creates: 0, hits: 0, coldStarts: 0, createdFor: 0, surged: 0, reuses: 0, adopted: 0, reaps: 0, boundWaits: 0, kills: new Map() };

  constructor(
    private readonly sandboxes: ModalSandboxes,
    private readonly o: PoolOptions,
  ) {
    this.places = new FairQueue(o.maxTotal, o.maxPerOrg);
    this.timer = setInterval(() => this.reap(), o.reapEveryMs ?? Math.min(5000, Math.max(250, o.idleTtlMs / 4)));
    this.timer.unref();
  }

  environment(req: EnvironmentRequest, keys: EnvironmentKeys): PoolEnvironment {
    let env = this.envs.get(keys.key);
    if (!env) {
      env = { ...keys, req, slots: new Set(), creating: 0, queued: 0, waiters: [], peak: 0, peakAt: 0 };
      this.envs.set(keys.key, env);
    }
    if (env.retired !== false) {
      env.retired = false;
      // A config change: the family's sandboxes of other keys are retired (terminated once idle).
      for (const other of this.envs.values()) {
        if (other === env || other.family !== env.family || other.retired) continue;
        other.retired = true;
        for (const s of [...other.slots]) if (s.active === 0 && !s.proving) this.kill(s, 'retired');
      }
    }
    return env;
  }

  status(env: PoolEnvironment): 'none' | 'building' | 'ready' | 'failed' {
    if ([...env.slots].some((s) => !s.dead)) return 'ready';
    if (env.creating > 0 || env.queued > 0 || env.preparing) return 'building';
    return env.lastError ? 'failed' : 'none';
  }

  alive(): number {
    let n = 0;
    for (const e of this.envs.values()) n += e.slots.size;
    return n;
  }

  creating(): number {
    let n = 0;
    for (const e of this.envs.values()) n += e.creating;
    return n;
  }

  /** Sandbox creations waiting for a place within the bounds. */
  queuedForPlace(): number {
    let n = 0;
    for (const e of this.envs.values()) n += e.queued;
    return n;
  }

  /** Starts filling the environment (adoption, then warm sandboxes: at least one) without waiting. */
  prepare(env: PoolEnvironment): void {
    if (env.preparing) return;
    env.preparing = true;
    void this.adoptOnce(env).then(() => {
      env.preparing = false;
      this.fill(env);
      if (env.slots.size === 0 && env.creating === 0 && env.queued === 0) this.grow(env, false);
    });
  }

  /**
   * A clean sandbox of the environment for one call: a free one, else the first one created or
   * freed. Past `waitMs`: PROVIDER_RATE_LIMITED when the bounds kept a sandbox from being created,
   * ENVIRONMENT_BUILDING when one is on its way.
   */
  async lease(env: PoolEnvironment, waitMs: number, signal: AbortSignal): Promise<Slot> {
    await this.adoptOnce(env);
    const free = this.pick(env);
    if (free) {
      this.counters.hits++;
      free.active++;
      return this.taken(free);
    }
    this.counters.coldStarts++;
    const slot = await new Promise<Slot>((resolve, reject) => {
      const timer = setTimeout(() => done(this.waitedTooLong(env)), waitMs);
      const onAbort = () => done(signal.reason instanceof Error ? signal.reason : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, 'the call was given up while it waited for a Modal sandbox'));
      const waiter: Waiter = (s) => done(s);
      const done = (s: Slot | Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        env.waiters = env.waiters.filter((w) => w !== waiter);
        if (s instanceof Error) reject(s);
        else resolve(s);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      env.waiters.push(waiter);
      this.notePeak(env);
      this.fill(env);
    });
    if (slot.served === 0) this.counters.createdFor++;
    return this.taken(slot);
  }

  /** Back to the pool when the call proved itself clean; terminated otherwise. */
  release(slot: Slot, clean: boolean, reason = 'dirty'): void {
    slot.active = Math.max(0, slot.active - 1);
    slot.lastUsed = Date.now();
    const env = slot.env;
    if (!clean) {
      this.kill(slot, reason);
      this.fill(env);
      return;
    }
    if (env.req.lanes > 1 && !slot.dead) {
      // Shared: once a call ended, nothing new starts before the sandbox drained and proved itself clean.
      slot.draining = true;
      if (slot.active === 0) void this.proveDrained(slot);
      return;
    }
    if (env.retired) {
      if (slot.active === 0) this.kill(slot, 'retired');
      return;
    }
    this.handOver(slot);
  }

  /** Forgets a sandbox another runner uses (every lane taken): its place is given back, the sandbox is left alone. */
  forget(slot: Slot): void {
    slot.active = Math.max(0, slot.active - 1);
    if (slot.dead) return;
    slot.dead = true;
    slot.env.slots.delete(slot);
    slot.place();
    this.fill(slot.env);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  /** A slot leased to a call (its `active` already counts the call). */
  private taken(slot: Slot): Slot {
    slot.served++;
    slot.lastUsed = Date.now();
    if (slot.served > 1) this.counters.reuses++;
    this.notePeak(slot.env);
    // Demand: keep `warm` idle sandboxes ready behind this one.
    this.fill(slot.env);
    return slot;
  }

  private pick(env: PoolEnvironment): Slot | undefined {
    let best: Slot | undefined;
    for (const s of env.slots) if (s.free && (!best || s.active > best.active || (s.active === best.active && s.lastUsed > best.lastUsed))) best = s;
    return best;
  }

  /** A free sandbox goes to the first waiting calls (as many as it has free lanes: held for them at once), or stays idle. */
  private handOver(slot: Slot): void {
    while (slot.free && slot.env.waiters.length > 0) {
      const waiter = slot.env.waiters.shift()!;
      slot.active++;
      waiter(slot);
    }
  }

  /** Calls (running and waiting) of the environment, in sandboxes. */
  private demand(env: PoolEnvironment): number {
    let calls = env.waiters.length;
    for (const s of env.slots) calls += s.active;
    return Math.ceil(calls / env.req.lanes);
  }

  private notePeak(env: PoolEnvironment): void {
    const now = Date.now();
    const d = this.demand(env);
    if (d >= env.peak || now - env.peakAt > this.o.idleTtlMs) {
      env.peak = d;
      env.peakAt = now;
    }
  }

  /**
   * Sandboxes the environment should have, alive or on their way: its demand plus `warm` idle ones;
   * while calls wait, twice the demand (a burst goes on growing: what is created for it now is
   * ready only after a create's latency); at least the recent peak (held for the idle TTL).
   */
  private target(env: PoolEnvironment): number {
    const d = this.demand(env);
    const surge = env.waiters.length > 0 ? 2 * d : 0;
    const held = Date.now() - env.peakAt <= this.o.idleTtlMs ? env.peak : 0;
    return Math.min(this.o.maxPerOrg, Math.max(d + this.o.warm, surge, held));
  }

  /** Creates sandboxes until the target exists or is on its way. */
  private fill(env: PoolEnvironment): void {
    if (env.retired || this.closed) return;
    let live = 0;
    for (const s of env.slots) if (!s.dead) live++;
    const wanted = this.target(env) - live - env.creating - env.queued;
    // The waiting calls' own sandboxes wait for a place in the bounds' queue; those ahead of demand are made only when a place is free at once.
    const needed = this.needed(env, false);
    for (let i = 0; i < wanted; i++) {
      if (!this.grow(env, i < needed)) return;
      if (i >= needed && env.waiters.length > 0) this.counters.surged++;
    }
  }

  /** Sandboxes the waiting calls need that are not on their way (`self`: one queued request asks about itself). */
  private needed(env: PoolEnvironment, self: boolean): number {
    let free = 0;
    for (const s of env.slots) if (s.free) free += env.req.lanes - s.active;
    return Math.ceil(Math.max(0, env.waiters.length - free) / env.req.lanes) - env.creating - env.queued + (self ? 1 : 0);
  }

  /** A place that frees up at once within the bounds, if there is one (its release, callable at any time). */
  private placeAtOnce(org: string): (() => void) | undefined {
    const before = this.places.inUse;
    const p = this.places.acquire(org, AT_ONCE);
    if (this.places.inUse === before) {
      p.catch(() => undefined);
      return undefined;
    }
    let release: (() => void) | undefined;
    let due = false;
    void p.then((r) => {
      release = r;
      if (due) r();
    });
    return once(() => {
      if (release) release();
      else due = true;
    });
  }

  /**
   * One more sandbox for the environment, if it gets a place within the bounds: at once, or (for a
   * waiting call) in the bounds' fair queue, an idle sandbox being terminated to make room.
   * Returns false when no place was free at once and the creation was not queued.
   */
  private grow(env: PoolEnvironment, queue: boolean): boolean {
    const place = this.placeAtOnce(env.req.org);
    if (place) {
      env.creating++;
      this.createOne(env, place);
      return true;
    }
    if (!queue) return false;
    env.queued++;
    this.counters.boundWaits++;
    const wanted = () => !this.closed && !env.retired && this.needed(env, true) > 0;
    const gaveUp = new AbortController();
    const check = setInterval(() => {
      if (!wanted()) gaveUp.abort();
      else this.makeRoom(env.req.org);
    }, 250);
    check.unref();
    this.makeRoom(env.req.org);
    this.places.acquire(env.req.org, gaveUp.signal).then(
      (release) => {
        clearInterval(check);
        const still = wanted();
        env.queued--;
        if (!still) return release();
        env.creating++;
        this.createOne(env, once(release));
      },
      () => {
        clearInterval(check);
        env.queued--;
      },
    );
    return true;
  }

  /** At a bound: terminates the least recently used idle sandbox (of the org when it is at its own bound, else of any org). */
  private makeRoom(org: string): void {
    let orgCount = 0;
    let total = 0;
    for (const e of this.envs.values()) {
      const n = e.slots.size + e.creating;
      total += n;
      if (e.req.org === org) orgCount += n;
    }
    const ownBound = orgCount >= this.o.maxPerOrg;
    if (!ownBound && total < this.o.maxTotal) return;
    let victim: Slot | undefined;
    for (const e of this.envs.values()) {
      if (ownBound && e.req.org !== org) continue;
      // Never the idle sandboxes its own waiting calls are about to take.
      if (e.waiters.length > 0) continue;
      for (const s of e.slots) if (s.active === 0 && !s.proving && !s.dead && (!victim || s.lastUsed < victim.lastUsed)) victim = s;
    }
    if (victim) this.kill(victim, 'evicted');
  }

  private createOne(env: PoolEnvironment, place: () => void): void {
    this.sandboxes.create(env.req, env).then(
      (ready) => {
        env.creating--;
        env.lastError = undefined;
        this.counters.creates++;
        const slot = new Slot(ready.sandbox, env, ready.proof, ready.node, place);
        env.slots.add(slot);
        if (env.retired || this.closed) return this.kill(slot, 'retired');
        this.handOver(slot);
      },
      (e: Error) => {
        env.creating--;
        place();
        env.lastError = e;
        this.log.warn(`creating a sandbox for org ${env.req.org} failed: ${e.message}`);
        for (const w of env.waiters.splice(0)) w(e);
      },
    );
  }

  /** Why a call waited for a sandbox past its wait: the bounds (nothing is being created for it: PROVIDER_RATE_LIMITED) or a sandbox still being made. */
  private waitedTooLong(env: PoolEnvironment): ToolplaneError {
    if (env.creating === 0) {
      return new ToolplaneError(ErrorCode.PROVIDER_RATE_LIMITED, `runner-modal's sandbox bound is reached (MODAL_MAX_SANDBOXES ${this.o.maxTotal}, MODAL_MAX_SANDBOXES_PER_ORG ${this.o.maxPerOrg}) and every sandbox is busy: try again shortly`, { provider: 'modal' });
    }
    return new ToolplaneError(ErrorCode.ENVIRONMENT_BUILDING, 'a Modal sandbox for this call is being created: try again shortly', { provider: 'modal' });
  }

  private async adoptOnce(env: PoolEnvironment): Promise<void> {
    env.adopted ??= this.sandboxes.adopt(env.req, env).then((found) => {
      for (const r of found) {
        const place = this.placeAtOnce(env.req.org);
        if (!place) {
          void this.sandboxes.terminate(r.sandbox, 'found again, but the sandbox bounds are full');
          continue;
        }
        env.slots.add(new Slot(r.sandbox, env, r.proof, r.node, place));
        this.counters.adopted++;
      }
    });
    return env.adopted;
  }

  private async proveDrained(slot: Slot): Promise<void> {
    slot.proving = true;
    let proof: Proof | undefined;
    try {
      proof = await this.sandboxes.prove(slot.env.req, slot.sandbox, { proof: this.sandboxes.proofJson(slot.proof) });
    } catch (e) {
      this.log.warn(`sandbox ${slot.id} could not prove itself clean: ${(e as Error).message}`);
    } finally {
      slot.proving = false;
      slot.draining = false;
    }
    if (!proof || slot.env.retired) return this.kill(slot, proof ? 'retired' : 'dirty');
    slot.proof = proof;
    slot.lastUsed = Date.now();
    this.handOver(slot);
    this.fill(slot.env);
  }

  private reap(): void {
    const now = Date.now();
    for (const env of [...this.envs.values()]) {
      for (const s of env.slots) {
        if (s.active > 0 || s.dead || s.proving) continue;
        if (env.retired) this.kill(s, 'retired');
        else if (now - s.lastUsed > this.o.idleTtlMs) {
          this.counters.reaps++;
          this.kill(s, 'idle');
        }
      }
      // Nothing left of a retired environment: forgotten.
      if (env.retired && env.slots.size === 0 && env.creating === 0 && env.queued === 0) this.envs.delete(env.key);
    }
  }

  private kill(slot: Slot, reason: string): void {
    if (slot.dead) return;
    slot.dead = true;
    slot.env.slots.delete(slot);
    this.counters.kills.set(reason, (this.counters.kills.get(reason) ?? 0) + 1);
    void this.sandboxes.terminate(slot.sandbox, reason).finally(() => slot.place());
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
