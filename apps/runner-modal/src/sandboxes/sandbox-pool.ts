import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import type { Proof } from '@toolplane/sandbox';
import type { Sandbox } from 'modal';
import type { EnvironmentKeys, EnvironmentRequest, ModalSandboxes } from './environments';

/** One sandbox of the pool: leased to one call at a time (never shared by two). */
export class Slot {
  busy = false;
  dead = false;
  /** Calls it has served (the first is not a reuse). */
  served = 0;
  lastUsed = Date.now();

  constructor(
    readonly sandbox: Sandbox,
    readonly env: PoolEnvironment,
    public proof: Proof,
  ) {}

  get id(): string {
    return this.sandbox.sandboxId;
  }
}

/** The sandboxes of one (org, token, config fingerprint, image) and its waiting calls. */
export interface PoolEnvironment extends EnvironmentKeys {
  req: EnvironmentRequest;
  slots: Set<Slot>;
  /** Sandboxes being created for it. */
  creating: number;
  waiters: Array<(slot: Slot | Error) => void>;
  adopted?: Promise<void>;
  lastError?: Error;
  /** A newer config fingerprint of its family is in use: its sandboxes are terminated once idle. */
  retired?: boolean;
  /** prepare() is looking for earlier sandboxes before it creates one. */
  preparing?: boolean;
}

export interface PoolOptions {
  maxPerOrg: number;
  warm: number;
  idleTtlMs: number;
}

export interface PoolCounters {
  creates: number;
  hits: number;
  coldStarts: number;
  reuses: number;
  adopted: number;
  reaps: number;
  kills: Map<string, number>;
}

/**
 * The slot pool of runner-modal: warm sandboxes per environment, created ahead of demand up to
 * `warm` idle ones (within the org's bound), leased one call at a time, kept only when the
 * launcher proved the call left nothing behind, reaped when idle, retired when the org's config
 * changes (a newer fingerprint in the same family), adopted after a restart. Knows no NATS.
 */
export class SandboxPool {
  private readonly log = new Logger(SandboxPool.name);
  private readonly envs = new Map<string, PoolEnvironment>();
  private readonly timer: NodeJS.Timeout;
  readonly counters: PoolCounters = { creates: 0, hits: 0, coldStarts: 0, reuses: 0, adopted: 0, reaps: 0, kills: new Map() };

  constructor(
    private readonly sandboxes: ModalSandboxes,
    private readonly o: PoolOptions,
  ) {
    this.timer = setInterval(() => this.reap(), Math.min(5000, Math.max(250, o.idleTtlMs / 4)));
    this.timer.unref();
  }

  environment(req: EnvironmentRequest, keys: EnvironmentKeys): PoolEnvironment {
    let env = this.envs.get(keys.key);
    if (!env) {
      env = { ...keys, req, slots: new Set(), creating: 0, waiters: [] };
      this.envs.set(keys.key, env);
    }
    if (env.retired !== false) {
      env.retired = false;
      // A config change: the family's sandboxes of other keys are retired (terminated once idle).
      for (const other of this.envs.values()) {
        if (other === env || other.family !== env.family || other.retired) continue;
        other.retired = true;
        for (const s of [...other.slots]) if (!s.busy) this.kill(s, 'retired');
      }
    }
    return env;
  }

  status(env: PoolEnvironment): 'none' | 'building' | 'ready' | 'failed' {
    if ([...env.slots].some((s) => !s.dead)) return 'ready';
    if (env.creating > 0 || env.preparing) return 'building';
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

  /** Starts filling the environment (adoption, then warm sandboxes: at least one) without waiting. */
  prepare(env: PoolEnvironment): void {
    if (env.preparing) return;
    env.preparing = true;
    void this.adoptOnce(env).then(() => {
      env.preparing = false;
      this.fill(env);
      if (env.slots.size === 0 && env.creating === 0 && !env.retired && this.orgCount(env.req.org) < this.o.maxPerOrg) this.createOne(env);
    });
  }

  /** A clean sandbox of the environment for one call: an idle one, else a new one (waits for one within the org's bound). */
  async lease(env: PoolEnvironment, waitMs: number, signal: AbortSignal): Promise<Slot> {
    await this.adoptOnce(env);
    const idle = this.idle(env);
    if (idle) {
      this.counters.hits++;
      return this.take(idle);
    }
    this.counters.coldStarts++;
    const slot = await new Promise<Slot>((resolve, reject) => {
      const timer = setTimeout(() => done(new ToolplaneError(ErrorCode.ENVIRONMENT_BUILDING, 'a Modal sandbox for this call is being created: try again shortly', { provider: 'modal' })), waitMs);
      const onAbort = () => done(signal.reason instanceof Error ? signal.reason : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, 'the call was given up while it waited for a Modal sandbox'));
      const waiter = (s: Slot | Error) => done(s);
      const done = (s: Slot | Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        env.waiters = env.waiters.filter((w) => w !== waiter);
        if (s instanceof Error) reject(s);
        else resolve(s);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      env.waiters.push(waiter);
      this.fill(env);
    });
    return this.take(slot);
  }

  /** Back to the pool when the call proved itself clean; terminated otherwise. */
  release(slot: Slot, clean: boolean, reason = 'dirty'): void {
    slot.busy = false;
    slot.lastUsed = Date.now();
    const retired = slot.env.retired === true;
    if (!clean || retired) {
      this.kill(slot, clean ? 'retired' : reason);
      this.fill(slot.env);
      return;
    }
    this.handOver(slot.env, slot);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private take(slot: Slot): Slot {
    slot.busy = true;
    slot.served++;
    if (slot.served > 1) this.counters.reuses++;
    // Demand: keep `warm` idle sandboxes ready behind this one.
    this.fill(slot.env);
    return slot;
  }

  private idle(env: PoolEnvironment): Slot | undefined {
    return [...env.slots].find((s) => !s.busy && !s.dead);
  }

  /** An idle slot goes to the first waiting call, or stays idle. */
  private handOver(env: PoolEnvironment, slot: Slot): void {
    const waiter = env.waiters.shift();
    if (waiter) {
      slot.busy = true; // taken by the waiter (take() counts it)
      waiter(slot);
    }
  }

  /** Creates sandboxes until `warm` idle ones (and one per waiting call) exist or are coming, within the org's bound. */
  private fill(env: PoolEnvironment): void {
    if (env.retired) return;
    const idle = [...env.slots].filter((s) => !s.busy && !s.dead).length;
    const wanted = Math.max(this.o.warm - idle, env.waiters.length - idle) - env.creating;
    for (let i = 0; i < wanted && this.orgCount(env.req.org) < this.o.maxPerOrg; i++) this.createOne(env);
  }

  private createOne(env: PoolEnvironment): void {
    env.creating++;
    this.sandboxes.create(env.req, env).then(
      (ready) => {
        env.creating--;
        env.lastError = undefined;
        this.counters.creates++;
        const slot = new Slot(ready.sandbox, env, ready.proof);
        env.slots.add(slot);
        if (env.retired) return this.kill(slot, 'retired');
        this.handOver(env, slot);
      },
      (e: Error) => {
        env.creating--;
        env.lastError = e;
        this.log.warn(`creating a sandbox for org ${env.req.org} failed: ${e.message}`);
        for (const w of env.waiters.splice(0)) w(e);
      },
    );
  }

  private async adoptOnce(env: PoolEnvironment): Promise<void> {
    env.adopted ??= this.sandboxes.adopt(env.req, env).then((found) => {
      for (const r of found) {
        const slot = new Slot(r.sandbox, env, r.proof);
        env.slots.add(slot);
        this.counters.adopted++;
      }
    });
    return env.adopted;
  }

  private orgCount(org: string): number {
    let n = 0;
    for (const e of this.envs.values()) if (e.req.org === org) n += e.slots.size + e.creating;
    return n;
  }

  private reap(): void {
    const now = Date.now();
    for (const env of this.envs.values()) {
      for (const s of env.slots) {
        if (!s.busy && !s.dead && now - s.lastUsed > this.o.idleTtlMs) {
          this.counters.reaps++;
          this.kill(s, 'idle');
        }
      }
    }
  }

  private kill(slot: Slot, reason: string): void {
    if (slot.dead) return;
    slot.dead = true;
    slot.env.slots.delete(slot);
    this.counters.kills.set(reason, (this.counters.kills.get(reason) ?? 0) + 1);
    void this.sandboxes.terminate(slot.sandbox, reason);
  }
}
