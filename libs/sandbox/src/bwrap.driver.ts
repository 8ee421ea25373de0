import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { prepareSupportDir, SECCOMP_GENERATOR, slotArgs, VENV_MOUNT } from './bwrap.args';
import { failed, invalidEnv, messageOf, toolEnv, type RunResult } from './outcome';
import { MAX_RESULT_FRAME_BYTES } from './process.driver';
import { pipSpecifiers } from './requirements';
import type { IsolationLimits, SandboxDriver, SandboxRunOutcome, SandboxRunSpec } from './sandbox.types';
import { Slot, type SlotLimits } from './slot';
import { DependencyInstallError, VenvBuilder, type PipIndexOptions } from './venv.builder';

const execFileP = promisify(execFile);
const NOBODY = 65534;
const WORK_DIR = '/tmp';

export interface PoolOptions {
  /** Slots per environment (calls of one environment served at once). */
  maxPerEnvironment: number;
  /** Slots across all environments: the memory budget (~10 MB each for a bare interpreter). */
  maxTotal: number;
  /** Slots kept ready for the default environment (no requirements, no network). */
  warm: number;
  /** An idle slot is closed after this long (the default environment keeps `warm`). */
  idleTtlMs: number;
  /** Modules every slot imports before forking calls. */
  preload: string[];
}

export interface BwrapDriverOptions {
  bwrapPath?: string;
  pythonPath?: string;
  /** Support files, virtualenvs (`venvs/`) live here. */
  workRoot?: string;
  runAsUid?: number;
  runAsGid?: number;
  pool?: Partial<PoolOptions>;
  /** Defaults for the kernel limits of each call. */
  limits?: Partial<Required<IsolationLimits>>;
  pip?: PipIndexOptions;
  pipTimeoutMs?: number;
}

export const DEFAULT_ISOLATION_LIMITS: Required<IsolationLimits> = {
  memoryBytes: 512 * 1024 * 1024,
  cpuSeconds: 60,
  processes: 64,
  openFiles: 256,
  fileBytes: 64 * 1024 * 1024,
  workDirBytes: 64 * 1024 * 1024,
};

export class IsolationUnavailableError extends Error {}

export interface DriverStats {
  slots: number;
  idle: number;
  busy: number;
  environments: number;
  warmHits: number;
  warmMisses: number;
  slotsStarted: number;
  slotsKilled: number;
  venvBuilds: number;
}

interface Env {
  key: string;
  python: string;
  venvDir?: string;
  network: boolean;
  /** Size of each call's work dir: fixed per slot (its tmpfs is mounted before the call arrives). */
  workBytes: number;
}

class Pool {
  readonly idle: Slot[] = [];
  readonly busy = new Set<Slot>();
  starting = 0;
  lastUsed = Date.now();
  constructor(readonly env: Env) {}
  get size(): number {
    return this.idle.length + this.busy.size + this.starting;
  }
}

/**
 * Runs each call in a forked child of a warm slot (python/slot.py): pid 1 of a bubblewrap sandbox
 * with its own user, pid, network, ipc, uts and mount namespaces, read-only system dirs, running
 * as an unprivileged host uid. Per call: a fresh size-capped tmpfs work dir, rlimits, no
 * capabilities, no new privileges, the seccomp filter, the declared env only; when the call ends
 * every process it started is killed. Slots are pooled per environment (interpreter or
 * virtualenv, network on/off).
 */
export class BwrapDriver implements SandboxDriver {
  readonly name = 'bwrap';
  readonly isolated = true;
  private readonly bwrapPath: string;
  private readonly pythonPath: string;
  private readonly workRoot: string;
  private readonly runAs?: { uid: number; gid: number };
  private readonly pool: PoolOptions;
  private readonly limits: Required<IsolationLimits>;
  private readonly pools = new Map<string, Pool>();
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<SandboxRunOutcome>>();
  private readonly slotWaiters: Array<() => void> = [];
  private supportDir = '';
  private pythonVersion = '';
  private venvs?: VenvBuilder;
  private sweeper?: NodeJS.Timeout;
  private counters = { warmHits: 0, warmMisses: 0, slotsStarted: 0, slotsKilled: 0 };

  constructor(private readonly options: BwrapDriverOptions = {}) {
    this.bwrapPath = options.bwrapPath ?? '/usr/bin/bwrap';
    this.pythonPath = options.pythonPath ?? '/usr/bin/python3';
    this.workRoot = options.workRoot ?? path.join(os.tmpdir(), 'toolplane-runs');
    this.runAs = process.getuid?.() === 0 ? { uid: options.runAsUid ?? NOBODY, gid: options.runAsGid ?? NOBODY } : undefined;
    this.pool = { maxPerEnvironment: 16, maxTotal: 64, warm: 2, idleTtlMs: 300_000, preload: [], ...options.pool };
    this.limits = { ...DEFAULT_ISOLATION_LIMITS, ...options.limits };
  }

  /**
   * Checks that isolation works here (bubblewrap, user namespaces, the seccomp generator), writes
   * the support files and warms the default environment. Throws IsolationUnavailableError.
   */
  async init(): Promise<void> {
    if (!existsSync(this.bwrapPath)) throw new IsolationUnavailableError(`bubblewrap is not installed (${this.bwrapPath} is missing; apt-get install bubblewrap)`);
    let program: Buffer;
    try {
      const { stdout } = await execFileP('/usr/bin/python3', ['-I', SECCOMP_GENERATOR], { encoding: 'buffer', maxBuffer: 1 << 20 });
      program = stdout;
    } catch (e) {
      throw new IsolationUnavailableError(`cannot build the seccomp filter (apt-get install python3-seccomp): ${messageOf(e).split('\n').slice(-3).join(' ')}`);
    }
    await fs.mkdir(this.workRoot, { recursive: true, mode: 0o711 });
    await fs.chmod(this.workRoot, 0o711);
    this.supportDir = await prepareSupportDir(this.workRoot, program, this.runAs?.uid ?? process.getuid?.() ?? NOBODY, this.runAs?.gid ?? process.getgid?.() ?? NOBODY);
    const probe = this.poolFor({ key: 'default', python: this.pythonPath, network: false, workBytes: this.limits.workDirBytes });
    let first: Slot;
    try {
      first = await this.startSlot(probe);
    } catch (e) {
      throw new IsolationUnavailableError(`a bubblewrap sandbox cannot start here: ${messageOf(e)}`);
    }
    this.pythonVersion = first.python;
    probe.idle.push(first);
    const venvRoot = path.join(this.workRoot, 'venvs');
    await fs.mkdir(venvRoot, { recursive: true, mode: 0o755 });
    this.venvs = new VenvBuilder({
      root: venvRoot,
      bwrapPath: this.bwrapPath,
      supportDir: this.supportDir,
      python: this.pythonPath,
      pythonVersion: this.pythonVersion,
      pip: this.options.pip ?? {},
      uid: this.runAs?.uid,
      gid: this.runAs?.gid,
      timeoutMs: this.options.pipTimeoutMs ?? 300_000,
    });
    await this.warmUp(probe);
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(this.pool.idleTtlMs / 2, 30_000)));
    this.sweeper.unref();
  }

  stats(): DriverStats {
    let idle = 0;
    let busy = 0;
    let slots = 0;
    for (const p of this.pools.values()) {
      idle += p.idle.length;
      busy += p.busy.size;
      slots += p.size;
    }
    return { slots, idle, busy, environments: this.pools.size, ...this.counters, venvBuilds: this.venvs?.builds ?? 0 };
  }

  run(spec: SandboxRunSpec, signal?: AbortSignal): Promise<SandboxRunOutcome> {
    const p = this.runOnce(spec, signal);
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  async close(): Promise<void> {
    this.closing.abort();
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.allSettled([...this.inFlight]);
    const all: Slot[] = [];
    for (const p of this.pools.values()) all.push(...p.idle.splice(0), ...p.busy);
    await Promise.allSettled(all.map((s) => s.kill()));
  }

  private async runOnce(spec: SandboxRunSpec, signal: AbortSignal | undefined): Promise<SandboxRunOutcome> {
    const started = performance.now();
    const done = (r: RunResult, extra: Partial<SandboxRunOutcome> = {}): SandboxRunOutcome => ({
      ...r,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...extra,
    });
    if (this.closing.signal.aborted || !this.supportDir) return done(failed('spawn_failed', 'SandboxClosed', 'the sandbox driver is closed or not initialized'));
    if (signal?.aborted) return done(failed('timeout', 'AbortError', 'the run was aborted by the caller'));
    const invalid = invalidEnv(spec.env);
    if (invalid) return done(failed('spawn_failed', 'InvalidEnv', invalid));
    const nonce = randomBytes(16).toString('hex');
    const lim = { ...this.limits, ...definedOnly(spec.isolation ?? {}) };
    const limits: SlotLimits = {
      memory_bytes: lim.memoryBytes,
      cpu_seconds: lim.cpuSeconds,
      processes: lim.processes,
      open_files: lim.openFiles,
      file_bytes: lim.fileBytes,
      work_bytes: lim.workDirBytes,
    };
    let job: Buffer;
    try {
      const env = toolEnv(spec.env, WORK_DIR);
      job = Buffer.from(JSON.stringify({ nonce, env, limits, source: spec.sourceCode, function: spec.functionName, args: spec.args, agent_id: spec.agentId ?? null }));
    } catch (e) {
      return done(failed('spawn_failed', 'InvalidArguments', `the arguments are not JSON: ${messageOf(e)}`));
    }
    let env: Env;
    try {
      env = await this.environmentFor(spec);
    } catch (e) {
      if (e instanceof DependencyInstallError) return done(failed('dependency_failed', 'DependencyInstallFailed', e.message));
      return done(failed('dependency_failed', 'DependencyInstallFailed', messageOf(e)));
    }
    const pool = this.poolFor(env);
    const queued = performance.now();
    let slot: Slot;
    let warm: boolean;
    try {
      ({ slot, warm } = await this.acquire(pool));
    } catch (e) {
      return done(failed('spawn_failed', 'SpawnError', `the sandbox could not start: ${messageOf(e)}`));
    }
    const queueMs = Math.round((performance.now() - queued) * 100) / 100;
    try {
      const r = await slot.run(
        {
          job,
          nonce,
          functionName: spec.functionName,
          timeoutMs: spec.timeoutMs,
          stdoutBytes: spec.limits.stdoutBytes,
          stderrBytes: spec.limits.stderrBytes,
          maxOutputBytes: spec.limits.maxOutputBytes,
          maxResultBytes: MAX_RESULT_FRAME_BYTES,
        },
        signal,
        this.closing.signal,
      );
      return done(r, { warm, queueMs });
    } finally {
      this.release(pool, slot);
    }
  }

  private async environmentFor(spec: SandboxRunSpec): Promise<Env> {
    const network = spec.network === true;
    const workBytes = spec.isolation?.workDirBytes ?? this.limits.workDirBytes;
    const suffix = `${network ? '+net' : ''}${workBytes !== this.limits.workDirBytes ? `+work${workBytes}` : ''}`;
    const reqs = spec.pipRequirements?.length ? pipSpecifiers(spec.pipRequirements.map(parseSpecifier)) : [];
    if (reqs.length === 0) return { key: `default${suffix}`, python: this.pythonPath, network, workBytes };
    const venvDir = await this.venvs!.ensure(reqs);
    return { key: `${path.basename(venvDir)}${suffix}`, python: `${VENV_MOUNT}/bin/python3`, venvDir, network, workBytes };
  }

  private poolFor(env: Env): Pool {
    let p = this.pools.get(env.key);
    if (!p) {
      p = new Pool(env);
      this.pools.set(env.key, p);
    }
    return p;
  }

  private async acquire(pool: Pool): Promise<{ slot: Slot; warm: boolean }> {
    pool.lastUsed = Date.now();
    for (;;) {
      if (this.closing.signal.aborted) throw new Error('the sandbox driver is closed');
      const idle = pool.idle.shift(); // FIFO: the slot used last is still forking its next child
      if (idle) {
        if (idle.dead) continue;
        pool.busy.add(idle);
        this.counters.warmHits++;
        return { slot: idle, warm: true };
      }
      if (pool.size < this.pool.maxPerEnvironment && (this.total() < this.pool.maxTotal || (await this.evictIdle(pool)))) {
        this.counters.warmMisses++;
        const slot = await this.startSlot(pool);
        pool.busy.add(slot);
        return { slot, warm: false };
      }
      await new Promise<void>((r) => this.slotWaiters.push(r));
    }
  }

  private release(pool: Pool, slot: Slot): void {
    pool.busy.delete(slot);
    if (slot.dead) {
      this.counters.slotsKilled++;
      if (pool.env.key === 'default' && !this.closing.signal.aborted) void this.warmUp(pool);
    } else if (this.closing.signal.aborted) {
      void slot.kill();
    } else {
      pool.idle.push(slot);
    }
    this.slotWaiters.shift()?.();
  }

  private async startSlot(pool: Pool): Promise<Slot> {
    pool.starting++;
    try {
      const env = pool.env;
      const slot = new Slot(env.key, {
        bwrapPath: this.bwrapPath,
        args: slotArgs({ supportDir: this.supportDir, python: env.python, venvDir: env.venvDir, network: env.network, preload: this.pool.preload, workBytes: env.workBytes }),
        ...(this.runAs ?? {}),
      });
      await slot.ready;
      this.counters.slotsStarted++;
      return slot;
    } finally {
      pool.starting--;
    }
  }

  private async warmUp(pool: Pool): Promise<void> {
    const missing = this.pool.warm - pool.size;
    const started = await Promise.allSettled(Array.from({ length: Math.max(0, missing) }, () => this.startSlot(pool)));
    for (const s of started) if (s.status === 'fulfilled') pool.idle.push(s.value);
    if (started.length) this.slotWaiters.shift()?.();
  }

  private total(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.size;
    return n;
  }

  /** Closes the least recently used idle slot of another environment; false when none is idle. */
  private async evictIdle(except: Pool): Promise<boolean> {
    const candidates = [...this.pools.values()].filter((p) => p !== except && p.idle.length > 0).sort((a, b) => a.lastUsed - b.lastUsed);
    const victim = candidates[0]?.idle.shift();
    if (!victim) return false;
    await victim.kill();
    return true;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, p] of this.pools) {
      const keep = key === 'default' ? this.pool.warm : 0;
      p.idle.sort((a, b) => b.lastUsed - a.lastUsed);
      while (p.idle.length > keep && now - p.idle[p.idle.length - 1]!.lastUsed > this.pool.idleTtlMs) void p.idle.pop()!.kill();
      if (p.size === 0 && key !== 'default') this.pools.delete(key);
    }
  }
}

/** `name`, `name==1.0`, `name>=1,<2` → {name, version}. */
function parseSpecifier(s: string): { name: string; version?: string } {
  const m = /^([^<>=!~\s]+)\s*(.*)$/.exec(s.trim());
  if (!m) return { name: s };
  return m[2] ? { name: m[1]!, version: m[2] } : { name: m[1]! };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
