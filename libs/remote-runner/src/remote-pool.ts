import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { FairQueue } from '@toolplane/platform';
import { DependencyInstallError, type Proof } from '@toolplane/sandbox';
import type { ReadySandbox, RemoteEnvironmentKeys, RemoteEnvironmentRequest, RemoteProvider } from './remote-provider';

/** One sandbox of the remote pool: leased to at most `calls_per_sandbox` calls at once (1 by default: never two). */
export class RemoteSandbox<B = unknown> {
  /** Calls running in it now. */
  active = 0;
  /** Calls it has served (the first is not a reuse). */
  served = 0;
  dead = false;
  /** Shared (calls_per_sandbox > 1): a call ended while others ran; no new call until it drained and proved itself clean. */
  draining = false;
  proving = false;
  lastUsed = Date.now();
  /** When the provider's own timeout of the sandbox was last renewed (providers with keepAlive). */
  extendedAt = Date.now();

  constructor(
    readonly box: B,
    readonly id: string,
    readonly env: RemoteEnvironment<any, B>,
    public proof: Proof,
    /** Node answers in it (TypeScript/JavaScript tools). */
    readonly node: boolean,
    /** Gives its place within the sandbox bounds back. */
    readonly place: () => void,
  ) {}

  get free(): boolean {
    return !this.dead && !this.draining && !this.proving && !this.env.retired && this.active < this.env.lanes;
  }

  /** Draining or proving: back in a moment (no new sandbox is made for the calls it will take). */
  get returning(): boolean {
    return !this.dead && !this.env.retired && (this.draining || this.proving);
  }
}

type Waiter = (sandbox: RemoteSandbox<any> | Error) => void;

export type RemoteEnvironmentStatus = 'none' | 'building' | 'ready' | 'failed';

/** The sandboxes of one environment (org, credentials, config fingerprint, requirements…), its waiting calls and the state of its build. */
export interface RemoteEnvironment<R extends RemoteEnvironmentRequest = RemoteEnvironmentRequest, B = unknown>
  extends RemoteEnvironmentKeys {
  readonly org: string;
  readonly lanes: number;
  readonly request: R;
  readonly sandboxes: Set<RemoteSandbox<B>>;
  /** Sandboxes being created for it (each holding its place). */
  creating: number;
  /** Places asked for in the bounds' queue: each becomes a create once granted. */
  queued: number;
  waiters: Waiter[];
  /** Sandboxes of earlier runner processes looked for (once per process). */
  discovery?: Promise<void>;
  discovering: boolean;
  /** A prepare or a call waiting for the environment asked for its first sandbox. */
  wantsOne: boolean;
  /** A newer config fingerprint of its family is in use: its sandboxes are killed once idle. */
  retired: boolean;
  /** Sandboxes its calls (running and waiting) needed at once lately, and when. */
  peak: number;
  peakAt: number;
  /** What the build is doing (the provider's progress lines). */
  progress?: string;
  /** The last build's failure (cleared by the next sandbox), thrown to the calls that waited for it. */
  failure?: Error;
  failedAt?: number;
  /** Builds that failed so far: a call throws the failure of a build it waited for. */
  failures: number;
  error?: { code: string; message: string; package?: string };
  updatedAt: number;
}

export interface RemotePoolOptions {
  /** Sandboxes alive or starting for one org. */
  maxPerOrg: number;
  /** Sandboxes alive or starting for all orgs together: places go to waiting orgs in turn. */
  maxTotal: number;
  /** Idle sandboxes kept ready per environment ahead of demand. */
  warm: number;
  idleTtlMs: number;
  /** A failed requirements install stays the calls' answer this long (a prepare always tries again). */
  buildRetryMs: number;
  /** How often idle sandboxes are looked for (default: a quarter of the TTL, 250 ms to 5 s). */
  reapEveryMs?: number;
}

export interface RemotePoolCounters {
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
  /** Times a sandbox creation waited for a place within the bounds. */
  boundWaits: number;
  kills: Map<string, number>;
  buildFailures: number;
  /** Calls answered ENVIRONMENT_BUILDING or PROVIDER_RATE_LIMITED after waiting for their environment. */
  buildingAnswers: number;
}

/** A signal already aborted: a place is taken only when it is free at once. */
const AT_ONCE = AbortSignal.abort();

/** A requirements install that failed: the call's outcome, not a provider failure. */
export function isDependencyFailure(e: unknown): boolean {
  return (
    e instanceof DependencyInstallError ||
    (e instanceof ToolplaneError && e.code === ErrorCode.DEPENDENCY_INSTALL_FAILED)
  );
}

/**
 * The pool of a remote runner: sandboxes per environment, made ahead of demand (the calls running
 * and waiting, plus `warm` idle ones; twice the demand while calls wait uncovered; a recent burst's
 * peak for the idle TTL), within a per-org and a global bound shared fairly between orgs
 * (FairQueue: a place that frees up goes to the waiting org served longest ago; an idle sandbox is
 * killed to make room), leased to `calls_per_sandbox` calls at once, kept only when the launcher
 * proved the calls left nothing behind (shared ones once drained), reaped when idle, retired when
 * the org's config changes (a newer key in the same family), found again after a restart. Growth
 * is event-driven: a lease, a release, a kill or a finished create sizes the environment again.
 * Knows no NATS and no provider: those are the runs service's and the RemoteProvider's.
 */
export class RemotePool<R extends RemoteEnvironmentRequest, B> {
  private readonly log = new Logger(RemotePool.name);
  private readonly envs = new Map<string, RemoteEnvironment<R, B>>();
  private readonly places: FairQueue;
  private readonly changes = new Set<() => void>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  readonly counters: RemotePoolCounters = {
    creates: 0,
    hits: 0,
    coldStarts: 0,
    createdFor: 0,
    surged: 0,
    reuses: 0,
    adopted: 0,
    reaps: 0,
    boundWaits: 0,
    kills: new Map(),
    buildFailures: 0,
    buildingAnswers: 0,
  };

  constructor(
    readonly provider: RemoteProvider<R, B>,
    private readonly o: RemotePoolOptions,
  ) {
    this.places = new FairQueue(o.maxTotal, o.maxPerOrg);
    this.timer = setInterval(() => this.reap(), o.reapEveryMs ?? Math.min(5000, Math.max(250, o.idleTtlMs / 4)));
    this.timer.unref();
  }

  /** The environment of a request (made on first use). Its first use retires the family's other keys (a config change). */
  environment(request: R, keys: RemoteEnvironmentKeys): RemoteEnvironment<R, B> {
    let env = this.envs.get(keys.key);
    if (!env) {
      env = {
        ...keys,
        org: request.org,
        lanes: request.lanes,
        request,
        sandboxes: new Set(),
        creating: 0,
        queued: 0,
        waiters: [],
        discovering: false,
        wantsOne: false,
        retired: true,
        peak: 0,
        peakAt: 0,
        failures: 0,
        updatedAt: Date.now(),
      };
      this.envs.set(keys.key, env);
    }
    if (env.retired) {
      env.retired = false;
      for (const other of this.envs.values()) {
        if (other === env || other.family !== env.family || other.org !== env.org || other.retired) continue;
        other.retired = true;
        for (const s of [...other.sandboxes]) if (s.active === 0 && !s.proving) this.kill(s, 'retired');
      }
    }
    return env;
  }

  status(env: RemoteEnvironment<R, B>): RemoteEnvironmentStatus {
    if (this.live(env) > 0) return 'ready';
    if (env.discovering || env.creating > 0 || env.queued > 0) return 'building';
    return env.failure ? 'failed' : 'none';
  }

  /** Starts filling the environment (discovery, then its first sandbox, then `warm` ones) without waiting. */
  prepare(env: RemoteEnvironment<R, B>): void {
    if (this.closed) return;
    if (this.live(env) === 0) env.wantsOne = true;
    if (env.discovery && !env.discovering) this.fill(env);
    else void this.discoverOnce(env);
  }

  /**
   * Waits until the environment has a sandbox (preparing it if needed) for at most `waitMs`; past
   * that ENVIRONMENT_BUILDING (a sandbox is on its way) or PROVIDER_RATE_LIMITED (the bounds keep
   * one from being made); the build's own error when the build it waited for failed; a failed
   * requirements install at once while it is recent.
   */
  async ensureReady(env: RemoteEnvironment<R, B>, waitMs: number, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + waitMs;
    const seen = env.failures;
    for (;;) {
      if (this.closed) throw this.stopping();
      if (this.live(env) > 0) return;
      if (env.failures > seen && env.failure) throw env.failure;
      if (env.failure && isDependencyFailure(env.failure) && Date.now() - (env.failedAt ?? 0) < this.o.buildRetryMs)
        throw env.failure;
      if (!env.wantsOne || !this.underway(env)) this.prepare(env);
      const left = until - Date.now();
      if (left <= 0 || signal?.aborted) {
        this.counters.buildingAnswers++;
        throw this.waitedTooLong(env);
      }
      await this.changed(left, signal);
    }
  }

  /**
   * A clean sandbox of the environment for one call: a free one, else the first one created or
   * freed. Past `waitMs`: PROVIDER_RATE_LIMITED when the bounds kept a sandbox from being created,
   * ENVIRONMENT_BUILDING when one is on its way.
   */
  async lease(env: RemoteEnvironment<R, B>, waitMs = 60_000, signal?: AbortSignal): Promise<RemoteSandbox<B>> {
    if (this.closed) throw this.stopping();
    await this.discoverOnce(env);
    const free = this.pick(env);
    if (free) {
      this.counters.hits++;
      free.active++;
      return this.taken(free);
    }
    this.counters.coldStarts++;
    const sandbox = await new Promise<RemoteSandbox<B>>((resolve, reject) => {
      const timer = setTimeout(() => done(this.waitedTooLong(env)), waitMs);
      const onAbort = () =>
        done(
          signal?.reason instanceof Error
            ? signal.reason
            : new ToolplaneError(
                ErrorCode.REQUEST_TIMEOUT,
                `the call was given up while it waited for a ${this.provider.label} sandbox`,
              ),
        );
      const waiter: Waiter = (s) => done(s);
      const done = (s: RemoteSandbox<any> | Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        env.waiters = env.waiters.filter((w) => w !== waiter);
        if (s instanceof Error) reject(s);
        else resolve(s);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      env.waiters.push(waiter);
      this.notePeak(env);
      this.fill(env);
    });
    if (sandbox.served === 0) this.counters.createdFor++;
    return this.taken(sandbox);
  }

  /** Ends a call's lease: back to the pool when the call proved itself clean (shared ones once drained and proved); killed otherwise. */
  release(sandbox: RemoteSandbox<B>, clean: boolean, reason = 'dirty'): void {
    sandbox.active = Math.max(0, sandbox.active - 1);
    sandbox.lastUsed = Date.now();
    const env = sandbox.env;
    if (!clean) {
      this.kill(sandbox, reason);
      this.fill(env);
      return;
    }
    this.renew(sandbox);
    if (env.lanes > 1 && !sandbox.dead) {
      // Shared: once a call ended, nothing new starts before the sandbox drained and proved itself clean.
      sandbox.draining = true;
      if (sandbox.active === 0) void this.proveDrained(sandbox);
      return;
    }
    if (env.retired) {
      if (sandbox.active === 0) this.kill(sandbox, 'retired');
      return;
    }
    this.handOver(sandbox);
    this.roomForQueued();
    this.notify();
  }

  /** Forgets a sandbox another runner replica uses (every lane taken): its place is given back, the sandbox is left alone. */
  forget(sandbox: RemoteSandbox<B>): void {
    sandbox.active = Math.max(0, sandbox.active - 1);
    if (sandbox.dead) return;
    sandbox.dead = true;
    sandbox.env.sandboxes.delete(sandbox);
    sandbox.place();
    this.fill(sandbox.env);
    this.notify();
  }

  /** Before a call of up to `ms`: the provider's own timeout of the sandbox is renewed if the call could outlive it. */
  async keepAliveFor(sandbox: RemoteSandbox<B>, ms: number): Promise<void> {
    const timeout = this.provider.sandboxTimeoutMs;
    if (!this.provider.keepAlive || timeout === undefined) return;
    if (sandbox.extendedAt + timeout - Date.now() > ms + 30_000) return;
    sandbox.extendedAt = Date.now();
    await this.provider.keepAlive(sandbox.box, ms + 60_000);
  }

  /** Sandboxes alive (all orgs, or one org's). */
  alive(org?: string): number {
    return this.sum((e) => (org === undefined || e.org === org ? this.live(e) : 0));
  }

  /** Sandboxes being created (each holding its place). */
  creating(): number {
    return this.sum((e) => e.creating);
  }

  /** Sandboxes being created, and environments looking for their sandboxes of an earlier runner. */
  building(): number {
    return this.sum((e) => e.creating + (e.discovering ? 1 : 0));
  }

  /** Sandbox creations waiting for a place within the bounds. */
  queuedForPlace(): number {
    return this.sum((e) => e.queued);
  }

  /** Kills sandboxes idle past the TTL (and retired ones once idle); forgets environments with nothing left. */
  reap(): void {
    const now = Date.now();
    for (const env of [...this.envs.values()]) {
      for (const s of [...env.sandboxes]) {
        if (s.active > 0 || s.dead || s.proving) continue;
        if (env.retired) this.kill(s, 'retired');
        else if (now - s.lastUsed > this.o.idleTtlMs) {
          this.counters.reaps++;
          this.kill(s, 'idle');
        }
      }
      const empty =
        env.sandboxes.size === 0 &&
        env.creating === 0 &&
        env.queued === 0 &&
        env.waiters.length === 0 &&
        !env.discovering;
      const failing = env.failure !== undefined && now - (env.failedAt ?? 0) < this.o.buildRetryMs;
      if (empty && (env.retired || (!failing && now - env.updatedAt > this.o.idleTtlMs))) this.envs.delete(env.key);
    }
  }

  /** Stops growing and reaping; the sandboxes stay (the provider's timeout ends them; a restarted runner finds them again). */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    for (const env of this.envs.values()) for (const w of env.waiters.splice(0)) w(this.stopping());
    this.notify();
  }

  /** A sandbox leased to a call (its `active` already counts the call). */
  private taken(sandbox: RemoteSandbox<B>): RemoteSandbox<B> {
    sandbox.served++;
    sandbox.lastUsed = Date.now();
    if (sandbox.served > 1) this.counters.reuses++;
    this.notePeak(sandbox.env);
    // Demand: keep `warm` idle sandboxes ready behind this one.
    this.fill(sandbox.env);
    return sandbox;
  }

  /** The free sandbox with the most calls running (calls packed: the others go idle and are reaped), then the most recently used. */
  private pick(env: RemoteEnvironment<R, B>): RemoteSandbox<B> | undefined {
    let best: RemoteSandbox<B> | undefined;
    for (const s of env.sandboxes)
      if (s.free && (!best || s.active > best.active || (s.active === best.active && s.lastUsed > best.lastUsed)))
        best = s;
    return best;
  }

  /** A free sandbox goes to the first waiting calls (as many as it has free lanes: held for them at once), or stays idle. */
  private handOver(sandbox: RemoteSandbox<B>): void {
    while (sandbox.free && sandbox.env.waiters.length > 0) {
      const waiter = sandbox.env.waiters.shift()!;
      sandbox.active++;
      waiter(sandbox);
    }
  }

  private sum(of: (env: RemoteEnvironment<R, B>) => number): number {
    let n = 0;
    for (const e of this.envs.values()) n += of(e);
    return n;
  }

  private live(env: RemoteEnvironment<R, B>): number {
    let n = 0;
    for (const s of env.sandboxes) if (!s.dead) n++;
    return n;
  }

  private underway(env: RemoteEnvironment<R, B>): boolean {
    return env.discovering || env.creating > 0 || env.queued > 0;
  }

  /** Calls (running and waiting) of the environment, in sandboxes. */
  private demand(env: RemoteEnvironment<R, B>): number {
    let calls = env.waiters.length;
    for (const s of env.sandboxes) calls += s.active;
    return Math.ceil(calls / env.lanes);
  }

  /** Waiting calls no free or returning (draining, proving) sandbox will take. */
  private uncovered(env: RemoteEnvironment<R, B>): number {
    let lanes = 0;
    for (const s of env.sandboxes)
      if (s.free) lanes += env.lanes - s.active;
      else if (s.returning) lanes += env.lanes;
    return Math.max(0, env.waiters.length - lanes);
  }

  private notePeak(env: RemoteEnvironment<R, B>): void {
    const now = Date.now();
    const d = this.demand(env);
    if (d >= env.peak || now - env.peakAt > this.o.idleTtlMs) {
      env.peak = d;
      env.peakAt = now;
    }
  }

  /**
   * Sandboxes the environment should have, alive or on their way: its demand plus `warm` idle ones;
   * while calls wait uncovered, twice the demand (a burst goes on growing: what is created for it
   * now is ready only after a create's latency); a burst's peak (more than one sandbox) for the idle
   * TTL; one when asked to prepare.
   */
  private target(env: RemoteEnvironment<R, B>): number {
    const d = this.demand(env);
    const surge = this.uncovered(env) > 0 ? 2 * d : 0;
    const held = env.peak > 1 && Date.now() - env.peakAt <= this.o.idleTtlMs ? env.peak : 0;
    return Math.min(this.o.maxPerOrg, Math.max(d + this.o.warm, surge, held, env.wantsOne ? 1 : 0));
  }

  /** Creates sandboxes until the target exists or is on its way. */
  private fill(env: RemoteEnvironment<R, B>): void {
    if (env.retired || this.closed) return;
    const wanted = this.target(env) - this.live(env) - env.creating - env.queued;
    // The sandboxes calls wait for queue for a place in the bounds; those ahead of demand are made only when a place is free at once.
    const needed = this.needed(env, false);
    for (let i = 0; i < wanted; i++) {
      if (!this.grow(env, i < needed)) return;
      if (i >= needed && env.waiters.length > 0) this.counters.surged++;
    }
  }

  /** Sandboxes the waiting calls (or a prepare) need that are not on their way (`self`: one queued request asks about itself). */
  private needed(env: RemoteEnvironment<R, B>, self: boolean): number {
    const first = env.wantsOne && this.live(env) === 0 ? 1 : 0;
    return Math.max(Math.ceil(this.uncovered(env) / env.lanes), first) - env.creating - env.queued + (self ? 1 : 0);
  }

  /** A place free at once within the bounds, if there is one (its release, callable at any time). */
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
   * One more sandbox for the environment, if it gets a place within the bounds: at once, or (for
   * waiting calls or a prepare) in the bounds' fair queue, an idle sandbox being killed to make
   * room. Returns false when no place was free at once and the creation was not queued.
   */
  private grow(env: RemoteEnvironment<R, B>, queue: boolean): boolean {
    const place = this.placeAtOnce(env.org);
    if (place) {
      this.createOne(env, place);
      return true;
    }
    if (!queue) return false;
    env.queued++;
    this.counters.boundWaits++;
    const wanted = () => !this.closed && !env.retired && this.needed(env, true) > 0;
    const gaveUp = new AbortController();
    // Waiting calls that give up leave no creation behind (checked now and then; room is made on every release too).
    const check = setInterval(() => {
      if (!wanted()) gaveUp.abort();
      else this.makeRoom(env.org);
    }, 250);
    check.unref();
    this.makeRoom(env.org);
    this.places.acquire(env.org, gaveUp.signal).then(
      (release) => {
        clearInterval(check);
        const still = wanted();
        env.queued--;
        if (!still) return release();
        this.createOne(env, once(release));
      },
      () => {
        clearInterval(check);
        env.queued--;
        this.notify();
      },
    );
    return true;
  }

  /** A sandbox went idle: creations queued at a bound may now have room (an idle sandbox to evict). */
  private roomForQueued(): void {
    for (const e of this.envs.values())
      if (e.queued > 0 && !e.retired && this.needed(e, true) > 0) this.makeRoom(e.org);
  }

  /** The org, or all orgs, hold every place they may. */
  private atBound(org: string): boolean {
    let orgCount = 0;
    let total = 0;
    for (const e of this.envs.values()) {
      const n = e.sandboxes.size + e.creating;
      total += n;
      if (e.org === org) orgCount += n;
    }
    return orgCount >= this.o.maxPerOrg || total >= this.o.maxTotal;
  }

  /** At a bound: kills the least recently used idle sandbox (of the org when it is at its own bound, else of any org). */
  private makeRoom(org: string): void {
    if (!this.atBound(org)) return;
    let orgCount = 0;
    for (const e of this.envs.values()) if (e.org === org) orgCount += e.sandboxes.size + e.creating;
    const ownBound = orgCount >= this.o.maxPerOrg;
    let victim: RemoteSandbox<B> | undefined;
    for (const e of this.envs.values()) {
      if (ownBound && e.org !== org) continue;
      // Never the idle sandboxes its own waiting calls are about to take.
      if (e.waiters.length > 0) continue;
      for (const s of e.sandboxes)
        if (s.active === 0 && !s.proving && !s.dead && (!victim || s.lastUsed < victim.lastUsed)) victim = s;
    }
    if (victim) this.kill(victim, 'evicted');
  }

  private createOne(env: RemoteEnvironment<R, B>, place: () => void): void {
    env.creating++;
    env.progress = 'creating a sandbox';
    env.updatedAt = Date.now();
    const progress = (line: string) => {
      env.progress = line;
      env.updatedAt = Date.now();
    };
    this.provider.create(env, progress).then(
      (ready) => {
        env.creating--;
        this.counters.creates++;
        const sandbox = this.add(env, ready, place);
        if (env.retired || this.closed) return this.kill(sandbox, 'retired');
        this.handOver(sandbox);
        this.notify();
      },
      (e: unknown) => {
        env.creating--;
        place();
        this.failed(env, e instanceof Error ? e : new Error(String(e)));
      },
    );
  }

  private add(env: RemoteEnvironment<R, B>, ready: ReadySandbox<B>, place: () => void): RemoteSandbox<B> {
    const sandbox = new RemoteSandbox(ready.box, this.provider.id(ready.box), env, ready.proof, ready.node, place);
    env.sandboxes.add(sandbox);
    env.wantsOne = false;
    env.failure = undefined;
    env.error = undefined;
    env.progress = undefined;
    env.updatedAt = Date.now();
    return sandbox;
  }

  private failed(env: RemoteEnvironment<R, B>, e: Error): void {
    env.failure = e;
    env.failures++;
    env.failedAt = Date.now();
    env.updatedAt = Date.now();
    env.progress = undefined;
    env.wantsOne = false;
    env.error =
      e instanceof DependencyInstallError
        ? { code: ErrorCode.DEPENDENCY_INSTALL_FAILED, message: e.message, package: e.packageName }
        : { code: e instanceof ToolplaneError ? e.code : ErrorCode.INTERNAL, message: e.message };
    this.counters.buildFailures++;
    this.log.warn(
      `a ${this.provider.label} sandbox of environment ${env.key} (org ${env.org}) could not be made: ${e.message.slice(0, 500)}`,
    );
    for (const w of env.waiters.splice(0)) w(e);
    this.notify();
  }

  /** Why a call waited past its wait: the bounds (nothing is being made for it, a creation waits for a place or the org holds every place it may: PROVIDER_RATE_LIMITED) or a sandbox still being made. */
  private waitedTooLong(env: RemoteEnvironment<R, B>): ToolplaneError {
    const p = this.provider;
    if (env.creating === 0 && !env.discovering && (env.queued > 0 || this.atBound(env.org))) {
      return new ToolplaneError(
        ErrorCode.PROVIDER_RATE_LIMITED,
        `runner-${p.name}'s sandbox bound is reached (${p.configPrefix}_MAX_SANDBOXES ${this.o.maxTotal}, ${p.configPrefix}_MAX_SANDBOXES_PER_ORG ${this.o.maxPerOrg}) and every sandbox is busy: try again shortly`,
        { provider: p.name },
      );
    }
    return new ToolplaneError(
      ErrorCode.ENVIRONMENT_BUILDING,
      `The ${p.label} environment of this call is still being built${env.progress ? ` (${env.progress})` : ''}: retry shortly`,
      {
        provider: p.name,
        status: this.status(env),
        ...(env.progress ? { progress: env.progress } : {}),
      },
    );
  }

  private stopping(): ToolplaneError {
    return new ToolplaneError(ErrorCode.SERVICE_RESTARTING, `runner-${this.provider.name} is stopping`);
  }

  /** Sandboxes of earlier runner processes, adopted once per environment, each within the bounds (else killed). */
  private discoverOnce(env: RemoteEnvironment<R, B>): Promise<void> {
    env.discovery ??= (async () => {
      env.discovering = true;
      env.progress = 'looking for its sandboxes';
      let found: Array<ReadySandbox<B>> = [];
      try {
        found = await this.provider.discover(env);
      } catch (e) {
        this.log.warn(
          `could not look for earlier ${this.provider.label} sandboxes of org ${env.org}: ${(e as Error).message}`,
        );
      }
      for (const r of found) {
        const place = this.placeAtOnce(env.org);
        if (!place) {
          void this.provider.kill(env, r.box, 'found again, but the sandbox bounds are full').catch(() => undefined);
          continue;
        }
        this.add(env, r, place);
        this.counters.adopted++;
      }
      env.discovering = false;
      if (env.progress === 'looking for its sandboxes') env.progress = undefined;
      // In the same turn: whoever waits sees the environment found or being built, never in between.
      this.fill(env);
      this.notify();
    })();
    return env.discovery;
  }

  private async proveDrained(sandbox: RemoteSandbox<B>): Promise<void> {
    sandbox.proving = true;
    let proof: Proof | undefined;
    try {
      proof = await this.provider.prove(sandbox.env, sandbox.box, sandbox.proof);
    } catch (e) {
      this.log.warn(`sandbox ${sandbox.id} could not prove itself clean: ${(e as Error).message}`);
    } finally {
      sandbox.proving = false;
      sandbox.draining = false;
    }
    if (!proof || sandbox.env.retired) {
      this.kill(sandbox, proof ? 'retired' : 'dirty');
      this.fill(sandbox.env);
      return;
    }
    sandbox.proof = proof;
    sandbox.lastUsed = Date.now();
    this.handOver(sandbox);
    this.fill(sandbox.env);
    this.notify();
  }

  /** Renews the provider's own timeout of a sandbox in use (at most every quarter of the idle TTL). */
  private renew(sandbox: RemoteSandbox<B>): void {
    if (!this.provider.keepAlive || Date.now() - sandbox.extendedAt <= this.o.idleTtlMs / 4) return;
    sandbox.extendedAt = Date.now();
    this.provider
      .keepAlive(sandbox.box, 0)
      .catch((e: Error) => this.log.warn(`could not renew the timeout of sandbox ${sandbox.id}: ${e.message}`));
  }

  private kill(sandbox: RemoteSandbox<B>, reason: string): void {
    if (sandbox.dead) return;
    sandbox.dead = true;
    sandbox.env.sandboxes.delete(sandbox);
    this.counters.kills.set(reason, (this.counters.kills.get(reason) ?? 0) + 1);
    this.notify();
    void this.provider
      .kill(sandbox.env, sandbox.box, reason)
      .catch((e: Error) => this.log.warn(`could not kill sandbox ${sandbox.id} (${reason}): ${e.message}`))
      .finally(() => sandbox.place());
  }

  private notify(): void {
    for (const w of [...this.changes]) w();
  }

  /** Resolves on the next change of the pool, after `ms`, or when `signal` aborts. */
  private changed(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.changes.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
      this.changes.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
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
