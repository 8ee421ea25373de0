import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { DependencyInstallError } from '@toolplane/sandbox';
import type { Sandbox } from 'e2b';
import type { E2bAccount } from './e2b.api';
import type { Proof } from './launcher';

/** What decides which sandboxes a call may use: the org (and its key), its sandbox config, its requirements. */
export interface EnvironmentRequest {
  org: string;
  account: E2bAccount;
  fingerprint: string | null;
  template: string;
  network: boolean;
  /** calls_per_sandbox: calls one sandbox runs at once (1: never two). */
  lanes: number;
  pip: string[];
  npm: string[];
  buildScripts: boolean;
}

export type EnvironmentStatusName = 'none' | 'building' | 'ready' | 'failed';

/** One environment: the sandboxes of one (org, key, config fingerprint, requirements) and the state of its build. */
export interface Environment extends EnvironmentRequest {
  /** Hash of everything above (and the launcher version): the `toolplane-key` tag of its sandboxes. */
  key: string;
  /** Hash of (deployment, org, requirements): a newer config fingerprint in a family retires the older sandboxes. */
  family: string;
  requirementsHash: string | null;
  status: EnvironmentStatusName;
  progress?: string;
  error?: { code: string; message: string; package?: string };
  /** The build's failure, thrown to the calls that waited for it. */
  failure?: Error;
  failedAt?: number;
  updatedAt: number;
  building?: Promise<void>;
  slots: Set<Slot>;
  /** Sandboxes of earlier runner processes looked for (once per process). */
  discovered: boolean;
}

/** One sandbox of the pool. */
export class Slot {
  active = 0;
  /** Calls it has served (the first is not a reuse). */
  served = 0;
  /** Shared sandboxes (lanes > 1): a call ended while others ran; no new call until it drained and proved itself clean. */
  draining = false;
  proving = false;
  dead = false;
  /** Its config fingerprint is superseded: killed once idle. */
  retired = false;
  lastUsed = Date.now();
  extendedAt = Date.now();

  constructor(
    readonly sandbox: Sandbox,
    readonly env: Environment,
    public proof: Proof,
    /** Node is present in the sandbox (TypeScript/JavaScript tools). */
    readonly node: boolean,
  ) {}

  get id(): string {
    return this.sandbox.sandboxId;
  }

  get free(): boolean {
    return !this.dead && !this.retired && !this.draining && !this.proving && this.active < this.env.lanes;
  }
}

/** How the pool gets sandboxes: a new one (created, set up, requirements installed), or those an earlier runner left. */
export interface SandboxFactory {
  build(env: Environment, progress: (line: string) => void): Promise<Slot>;
  /** The environment's sandboxes of earlier runner processes that prove clean (the rest of the family with another fingerprint are killed). */
  discover(env: Environment): Promise<Slot[]>;
  /** Proves a drained shared sandbox clean; false: kill it. */
  prove(slot: Slot): Promise<boolean>;
  kill(slot: Slot, reason: string): Promise<void>;
  /** Renews E2B's own timeout of the sandbox: at least `minMs` from now. */
  keepAlive(slot: Slot, minMs?: number): Promise<void>;
  /** E2B's own timeout of a sandbox, as set at creation and by keepAlive. */
  readonly sandboxTimeoutMs: number;
}

export interface PoolLimits {
  maxTotal: number;
  maxPerOrg: number;
  idleTtlMs: number;
  /** A failed requirements install stays the answer this long. */
  buildRetryMs: number;
}

export interface PoolCounters {
  creates: number;
  adopted: number;
  reuses: number;
  reaps: number;
  kills: Map<string, number>;
  buildFailures: number;
  buildingAnswers: number;
}

/** Why a call could not have its environment yet (retryable). */
export function environmentBuilding(env: Environment): ToolplaneError {
  return new ToolplaneError(ErrorCode.ENVIRONMENT_BUILDING, `The E2B environment of this call is still being built${env.progress ? ` (${env.progress})` : ''}: retry shortly`, {
    provider: 'e2b',
    status: env.status,
    ...(env.progress ? { progress: env.progress } : {}),
  });
}

/**
 * The slot pool: sandboxes per environment, leased to calls (at most `lanes` at once each), bounded
 * per org and in total, made in the background, found again after a restart, reaped when idle,
 * retired when their org's config changes, killed when a call could not prove them clean.
 */
export class SandboxPool {
  private readonly log = new Logger(SandboxPool.name);
  private readonly envs = new Map<string, Environment>();
  private readonly waiters = new Set<() => void>();
  private readonly building = new Map<string, number>(); // builds in flight per org
  private reaper?: NodeJS.Timeout;
  private closed = false;
  readonly counters: PoolCounters = { creates: 0, adopted: 0, reuses: 0, reaps: 0, kills: new Map(), buildFailures: 0, buildingAnswers: 0 };

  constructor(
    private readonly factory: SandboxFactory,
    private readonly limits: PoolLimits,
  ) {
    this.reaper = setInterval(() => void this.reap(), Math.max(250, Math.min(limits.idleTtlMs / 4, 30_000)));
    this.reaper.unref();
  }

  /** The environment record of a request (made on first use). A newer fingerprint of the family retires the older sandboxes. */
  environment(key: string, family: string, requirementsHash: string | null, req: EnvironmentRequest): Environment {
    let env = this.envs.get(key);
    if (!env) {
      env = { ...req, key, family, requirementsHash, status: 'none', updatedAt: Date.now(), slots: new Set(), discovered: false };
      this.envs.set(key, env);
    }
    for (const other of this.envs.values()) {
      if (other !== env && other.family === family && other.org === req.org && other.fingerprint !== req.fingerprint) this.retire(other);
    }
    return env;
  }

  status(env: Environment): EnvironmentStatusName {
    if (this.live(env).length) return 'ready';
    return env.status === 'ready' ? 'none' : env.status;
  }

  /**
   * Waits until the environment has a sandbox (starting its build if needed) for at most `waitMs`:
   * ENVIRONMENT_BUILDING past that (the build goes on), the build's own error if it failed.
   */
  async ensureReady(env: Environment, waitMs: number, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + waitMs;
    for (;;) {
      if (this.closed) throw new ToolplaneError(ErrorCode.SERVICE_RESTARTING, 'runner-e2b is stopping');
      if (this.live(env).length) return;
      if (env.status === 'failed' && env.failure instanceof DependencyInstallError && Date.now() - (env.failedAt ?? 0) < this.limits.buildRetryMs) throw env.failure;
      if (!env.building) this.startBuild(env);
      const build = env.building;
      const left = until - Date.now();
      if (left <= 0 || signal?.aborted) {
        this.counters.buildingAnswers++;
        throw environmentBuilding(env);
      }
      await this.changed(left, signal);
      if (!env.building && env.status === 'failed' && env.failure && build) throw env.failure;
    }
  }

  /** Starts the environment's build (discovery first, once) in the background, if the limits allow one more sandbox. */
  startBuild(env: Environment): void {
    if (env.building || this.closed) return;
    env.status = 'building';
    env.progress = env.discovered ? 'creating a sandbox' : 'looking for its sandboxes';
    env.updatedAt = Date.now();
    env.error = undefined;
    this.building.set(env.org, (this.building.get(env.org) ?? 0) + 1);
    env.building = (async () => {
      try {
        if (!env.discovered) {
          env.discovered = true;
          for (const slot of await this.factory.discover(env)) {
            this.counters.adopted++;
            env.slots.add(slot);
          }
          if (this.live(env).length) return;
          env.progress = 'creating a sandbox';
        }
        await this.makeRoom(env.org);
        const slot = await this.factory.build(env, (line) => {
          env.progress = line;
          env.updatedAt = Date.now();
        });
        this.counters.creates++;
        env.slots.add(slot);
      } finally {
        this.building.set(env.org, (this.building.get(env.org) ?? 1) - 1);
      }
    })().then(
      () => {
        env.building = undefined;
        env.status = 'ready';
        env.progress = undefined;
        env.failure = undefined;
        env.updatedAt = Date.now();
        this.notify();
      },
      (e: unknown) => {
        env.building = undefined;
        env.status = 'failed';
        env.failure = e instanceof Error ? e : new Error(String(e));
        env.failedAt = Date.now();
        env.updatedAt = Date.now();
        env.progress = undefined;
        env.error =
          e instanceof DependencyInstallError
            ? { code: ErrorCode.DEPENDENCY_INSTALL_FAILED, message: e.message, package: e.packageName }
            : { code: e instanceof ToolplaneError ? e.code : ErrorCode.INTERNAL, message: env.failure.message };
        this.counters.buildFailures++;
        this.log.warn(`environment ${env.key} of org ${env.org} could not be built: ${env.failure.message.slice(0, 500)}`);
        this.notify();
      },
    );
  }

  /** A sandbox of the environment for one call: a free one, else a new one when the limits allow, else the next one freed. */
  async lease(env: Environment, signal?: AbortSignal): Promise<Slot> {
    for (;;) {
      if (this.closed) throw new ToolplaneError(ErrorCode.SERVICE_RESTARTING, 'runner-e2b is stopping');
      signal?.throwIfAborted();
      const slot = this.pick(env);
      if (slot) {
        slot.active++;
        if (slot.served++ > 0) this.counters.reuses++;
        slot.lastUsed = Date.now();
        return slot;
      }
      if (!env.building && this.live(env).length === 0 && env.status === 'failed' && env.failure) throw env.failure;
      // Busy: one more sandbox if the org may have it (the build joins the pool; whichever frees first
      // serves) — unless a shared one is only proving itself clean: it is back in a moment.
      const returning = [...env.slots].some((x) => !x.dead && !x.retired && (x.proving || x.draining));
      if (!env.building && !returning && (this.roomFor(env.org) || this.evictable(env.org))) this.startBuild(env);
      await this.changed(60_000, signal);
    }
  }

  /** Ends a call's lease. `clean: false` (dirty, lost, unproven): the sandbox is killed. */
  release(slot: Slot, clean: boolean, reason = 'dirty'): void {
    slot.active = Math.max(0, slot.active - 1);
    slot.lastUsed = Date.now();
    if (!clean) {
      void this.kill(slot, reason);
      return;
    }
    if (slot.env.lanes > 1 && !slot.dead) {
      // Shared: once a call ended, nothing new starts before the sandbox drained and proved itself clean.
      slot.draining = true;
      if (slot.active === 0) void this.proveDrained(slot);
    } else if (slot.retired && slot.active === 0) {
      void this.kill(slot, 'retired');
    }
    if (Date.now() - slot.extendedAt > this.limits.idleTtlMs / 4) {
      slot.extendedAt = Date.now();
      this.factory.keepAlive(slot).catch((e: Error) => this.log.warn(`could not renew the timeout of sandbox ${slot.id}: ${e.message}`));
    }
    this.notify();
  }

  /** Before a call of up to `ms`: E2B's own timeout of the sandbox is renewed if the call could outlive it. */
  async keepAliveFor(slot: Slot, ms: number): Promise<void> {
    const left = slot.extendedAt + this.factory.sandboxTimeoutMs - Date.now();
    if (left > ms + 30_000) return;
    slot.extendedAt = Date.now();
    await this.factory.keepAlive(slot, ms + 60_000);
  }

  /** Forgets a sandbox another replica holds (its lanes were all taken): not killed. */
  forget(slot: Slot): void {
    slot.active = Math.max(0, slot.active - 1);
    slot.dead = true;
    slot.env.slots.delete(slot);
    this.notify();
  }

  async kill(slot: Slot, reason: string): Promise<void> {
    if (slot.dead) return;
    slot.dead = true;
    slot.env.slots.delete(slot);
    this.counters.kills.set(reason, (this.counters.kills.get(reason) ?? 0) + 1);
    this.notify();
    await this.factory.kill(slot, reason).catch((e: Error) => this.log.warn(`could not kill sandbox ${slot.id} (${reason}): ${e.message}`));
  }

  /** Sandboxes alive (all orgs), and per org. */
  alive(org?: string): number {
    let n = 0;
    for (const env of this.envs.values()) if (org === undefined || env.org === org) n += this.live(env).length;
    return n;
  }

  get totalBuilding(): number {
    let n = 0;
    for (const v of this.building.values()) n += v;
    return n;
  }

  /** Kills sandboxes idle past the TTL (and retired ones once idle); forgets environments with nothing left. */
  async reap(): Promise<void> {
    const now = Date.now();
    for (const env of [...this.envs.values()]) {
      for (const slot of [...env.slots]) {
        if (slot.active > 0 || slot.proving) continue;
        if (slot.retired) await this.kill(slot, 'retired');
        else if (now - slot.lastUsed >= this.limits.idleTtlMs) {
          this.counters.reaps++;
          await this.kill(slot, 'idle');
        }
      }
      const gone = env.slots.size === 0 && !env.building;
      if (gone && env.status !== 'failed' && now - env.updatedAt > this.limits.idleTtlMs) this.envs.delete(env.key);
    }
  }

  /** Stops reaping; the sandboxes stay (E2B's own timeout ends them; a restarted runner finds them again). */
  close(): void {
    this.closed = true;
    if (this.reaper) clearInterval(this.reaper);
    this.notify();
  }

  private live(env: Environment): Slot[] {
    return [...env.slots].filter((s) => !s.dead && !s.retired);
  }

  private pick(env: Environment): Slot | undefined {
    let best: Slot | undefined;
    for (const s of env.slots) if (s.free && (!best || s.active < best.active || (s.active === best.active && s.lastUsed > best.lastUsed))) best = s;
    return best;
  }

  private count(org?: string): number {
    return this.alive(org) + (org === undefined ? this.totalBuilding : (this.building.get(org) ?? 0));
  }

  private roomFor(org: string): boolean {
    return this.count(org) < this.limits.maxPerOrg && this.count() < this.limits.maxTotal;
  }

  private idleSlots(org?: string): Slot[] {
    const out: Slot[] = [];
    for (const env of this.envs.values()) if (org === undefined || env.org === org) for (const s of env.slots) if (!s.dead && s.active === 0 && !s.proving) out.push(s);
    return out.sort((a, b) => a.lastUsed - b.lastUsed);
  }

  private evictable(org: string): boolean {
    return this.idleSlots(this.count(org) >= this.limits.maxPerOrg ? org : undefined).length > 0;
  }

  /** Frees a place for one more sandbox of `org` (counting its build already): kills the least recently used idle one when at a bound. */
  private async makeRoom(org: string): Promise<void> {
    // The build counts itself: at most `max` including it.
    const over = () => this.count(org) > this.limits.maxPerOrg || this.count() > this.limits.maxTotal;
    while (over()) {
      const victim = this.idleSlots(this.count(org) > this.limits.maxPerOrg ? org : undefined)[0];
      if (!victim) throw new ToolplaneError(ErrorCode.PROVIDER_RATE_LIMITED, `runner-e2b's sandbox bound is reached (E2B_MAX_SANDBOXES_PER_ORG ${this.limits.maxPerOrg}, E2B_MAX_SANDBOXES ${this.limits.maxTotal}) and every sandbox is busy`, { provider: 'e2b' });
      await this.kill(victim, 'evicted');
    }
  }

  private retire(env: Environment): void {
    for (const slot of env.slots) {
      if (slot.dead) continue;
      slot.retired = true;
      if (slot.active === 0 && !slot.proving) void this.kill(slot, 'retired');
    }
    if (!env.building) this.envs.delete(env.key);
  }

  private async proveDrained(slot: Slot): Promise<void> {
    slot.proving = true;
    let clean = false;
    try {
      clean = await this.factory.prove(slot);
    } catch (e) {
      this.log.warn(`sandbox ${slot.id} could not prove itself clean: ${(e as Error).message}`);
    } finally {
      slot.proving = false;
      slot.draining = false;
    }
    if (!clean || slot.retired) await this.kill(slot, clean ? 'retired' : 'dirty');
    this.notify();
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves on the next change of the pool, after `ms`, or when `signal` aborts. */
  private changed(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
