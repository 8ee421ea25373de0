import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs, realpathSync } from 'node:fs';
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
import { NODE_MOUNT, NodeModulesBuilder, NPM_MOUNT, npmSpecifiers, type NpmSourceOptions } from './npm.builder';
import { prepareScript } from './typescript';

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
  /**
   * More environments to keep warm: each one's virtualenv is built (in the background, after
   * `init()`) and `warm` of its slots are kept ready like the default environment's.
   */
  warmEnvironments?: WarmEnvironment[];
}

/** An environment kept warm besides the default one (keyed like a call's: requirements, network). */
export interface WarmEnvironment {
  pipRequirements: string[];
  network?: boolean;
  warm: number;
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
  /** Node binary for TypeScript/JavaScript tools (default: the one running this process), bound read-only into their sandboxes. */
  nodePath?: string;
  /** npm's package dir (holding bin/npm-cli.js) used to build node_modules trees. */
  npmDir?: string;
  npm?: NpmSourceOptions;
  npmTimeoutMs?: number;
  /** A configured warm environment (`pool.warmEnvironments`) could not be built; the runner keeps serving. */
  onWarmFailure?: (message: string) => void;
}

/**
 * V8 reserves ~1.2 GiB of address space before it allocates anything, so RLIMIT_AS of a Node
 * tool is its memory limit plus this; the heap itself is capped at the memory limit
 * (`--max-old-space-size`).
 */
export const NODE_ADDRESS_SPACE_HEADROOM = 1536 * 1024 * 1024;

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
  /** Node tools: the Node binary (host path) and the node_modules tree (host dir), if any. */
  node?: string;
  npmDir?: string;
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
  private nodeModules?: Promise<NodeModulesBuilder>;
  private nodeRuntime?: Promise<{ node: string; npmDir: string; version: string }>;
  private sweeper?: NodeJS.Timeout;
  /** Configured warm environments: slots kept per environment key. */
  private readonly warmTargets = new Map<string, number>();
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
    for (const w of this.pool.warmEnvironments ?? []) void this.keepWarm(w);
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
    const onNode = isNodeSource(spec.sourceType);
    const limits: SlotLimits = {
      memory_bytes: onNode ? lim.memoryBytes + NODE_ADDRESS_SPACE_HEADROOM : lim.memoryBytes,
      cpu_seconds: lim.cpuSeconds,
      processes: lim.processes,
      open_files: lim.openFiles,
      file_bytes: lim.fileBytes,
      work_bytes: lim.workDirBytes,
    };
    let job: Buffer;
    try {
      const env = toolEnv(spec.env, WORK_DIR);
      const node = onNode ? nodeJob(spec, lim.memoryBytes) : {};
      job = Buffer.from(JSON.stringify({ nonce, env, limits, source: spec.sourceCode, function: spec.functionName, args: spec.args, agent_id: spec.agentId ?? null, ...node }));
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
      // The reply may come before the call's end (see Slot): the slot goes back to the pool only
      // once every process of the call is dead and its streams are closed off by the sentinel.
      void slot.idle().then(() => this.release(pool, slot));
    }
  }

  private async environmentFor(spec: SandboxRunSpec): Promise<Env> {
    const network = spec.network === true;
    const workBytes = spec.isolation?.workDirBytes ?? this.limits.workDirBytes;
    const suffix = `${network ? '+net' : ''}${workBytes !== this.limits.workDirBytes ? `+work${workBytes}` : ''}`;
    if (isNodeSource(spec.sourceType)) return this.nodeEnvironment(spec, network, workBytes, suffix);
    const reqs = spec.pipRequirements?.length ? pipSpecifiers(spec.pipRequirements.map(parseSpecifier)) : [];
    if (reqs.length === 0) return { key: `default${suffix}`, python: this.pythonPath, network, workBytes };
    const venvDir = await this.venvs!.ensure(reqs);
    return { key: `${path.basename(venvDir)}${suffix}`, python: `${VENV_MOUNT}/bin/python3`, venvDir, network, workBytes };
  }

  private async nodeEnvironment(spec: SandboxRunSpec, network: boolean, workBytes: number, suffix: string): Promise<Env> {
    const { node } = await this.nodeHost();
    const reqs = spec.npmRequirements?.length ? npmSpecifiers(spec.npmRequirements.map(parseNpmSpecifier)) : [];
    if (reqs.length === 0) return { key: `node${suffix}`, python: this.pythonPath, network, workBytes, node };
    const npmDir = await (await this.npmBuilder()).ensure(reqs);
    return { key: `${path.basename(npmDir)}${suffix}`, python: this.pythonPath, network, workBytes, node, npmDir };
  }

  /** The Node binary and npm the sandboxes bind, where the sandbox user can read them (see `shareable`). */
  private nodeHost(): Promise<{ node: string; npmDir: string; version: string }> {
    this.nodeRuntime ??= (async () => {
      const host = realpathSync(this.options.nodePath ?? process.execPath);
      const { stdout } = await execFileP(host, ['-p', 'process.versions.node'], { env: {} });
      const besideNode = path.resolve(path.dirname(host), '..', 'lib', 'node_modules', 'npm');
      const npmDir = this.options.npmDir ?? (existsSync(path.join(besideNode, 'bin', 'npm-cli.js')) ? besideNode : '/usr/lib/node_modules/npm');
      return { node: await this.shareable(host, 'node'), npmDir: existsSync(npmDir) ? await this.shareable(npmDir, 'npm') : npmDir, version: stdout.trim() };
    })();
    this.nodeRuntime.catch(() => (this.nodeRuntime = undefined));
    return this.nodeRuntime;
  }

  /**
   * A host path bound read-only into sandboxes must be readable by the sandbox user. When the
   * runner runs as root and the path is not (e.g. Node from a checkout under a 0700 temp dir), a
   * copy under the work root is used instead, made once per runner start.
   */
  private async shareable(hostPath: string, name: string): Promise<string> {
    if (!this.runAs || (await readableByOthers(hostPath))) return hostPath;
    const copy = path.join(this.workRoot, 'host', name);
    await fs.rm(copy, { recursive: true, force: true });
    await fs.mkdir(path.dirname(copy), { recursive: true, mode: 0o755 });
    await fs.cp(hostPath, copy, { recursive: true, dereference: true });
    await execFileP('/bin/chmod', ['-R', 'a+rX', copy]);
    return copy;
  }

  private npmBuilder(): Promise<NodeModulesBuilder> {
    this.nodeModules ??= (async () => {
      const { node, npmDir, version } = await this.nodeHost();
      const root = path.join(this.workRoot, 'node_modules');
      await fs.mkdir(root, { recursive: true, mode: 0o755 });
      return new NodeModulesBuilder({
        root,
        bwrapPath: this.bwrapPath,
        supportDir: this.supportDir,
        node,
        nodeVersion: version,
        npmDir,
        npm: this.options.npm ?? {},
        uid: this.runAs?.uid,
        gid: this.runAs?.gid,
        timeoutMs: this.options.npmTimeoutMs ?? 300_000,
      });
    })();
    this.nodeModules.catch(() => (this.nodeModules = undefined));
    return this.nodeModules;
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
      const idle = takeIdle(pool.idle);
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
      if (this.warmTarget(pool.env.key) > 0 && !this.closing.signal.aborted) void this.warmUp(pool);
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
        args: slotArgs({ supportDir: this.supportDir, python: env.python, venvDir: env.venvDir, network: env.network, preload: this.pool.preload, workBytes: env.workBytes, node: env.node, npmDir: env.npmDir }),
        ...(this.runAs ?? {}),
      });
      await slot.ready;
      this.counters.slotsStarted++;
      return slot;
    } finally {
      pool.starting--;
    }
  }

  /** Builds a configured environment (its virtualenv) and keeps `warm` of its slots ready. */
  private async keepWarm(w: WarmEnvironment): Promise<void> {
    try {
      const env = await this.environmentFor({ pipRequirements: w.pipRequirements, network: w.network } as SandboxRunSpec);
      if (this.closing.signal.aborted) return;
      this.warmTargets.set(env.key, w.warm);
      await this.warmUp(this.poolFor(env));
    } catch (e) {
      this.options.onWarmFailure?.(`${w.pipRequirements.join(' ') || '(no requirements)'}${w.network ? ' +network' : ''}: ${messageOf(e)}`);
    }
  }

  /** Slots an environment keeps ready: `warm` for the default one, its own number for a configured one. */
  private warmTarget(key: string): number {
    return key === 'default' ? this.pool.warm : (this.warmTargets.get(key) ?? 0);
  }

  private async warmUp(pool: Pool): Promise<void> {
    // Warm slots count against the total budget like any other.
    const missing = Math.min(this.warmTarget(pool.env.key) - pool.size, this.pool.maxTotal - this.total());
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
      const keep = this.warmTarget(key);
      p.idle.sort((a, b) => b.lastUsed - a.lastUsed);
      while (p.idle.length > keep && now - p.idle[p.idle.length - 1]!.lastUsed > this.pool.idleTtlMs) void p.idle.pop()!.kill();
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

/** `name`, `name==1.0`, `name>=1,<2` → {name, version}. */
function parseSpecifier(s: string): { name: string; version?: string } {
  const m = /^([^<>=!~\s]+)\s*(.*)$/.exec(s.trim());
  if (!m) return { name: s };
  return m[2] ? { name: m[1]!, version: m[2] } : { name: m[1]! };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function isNodeSource(t: string | undefined): boolean {
  return t === 'typescript' || t === 'javascript';
}

/** The Node part of a slot job: JavaScript (types stripped here, never run here) and the parameter order. */
function nodeJob(spec: SandboxRunSpec, memoryBytes: number): Record<string, unknown> {
  const { code, params } = prepareScript(spec.sourceCode, spec.functionName);
  return { runtime: 'node', source: code, params, module_dir: NPM_MOUNT, node: { path: NODE_MOUNT, heap_mb: Math.max(16, Math.floor(memoryBytes / (1024 * 1024))) } };
}

/** `name`, `@scope/name`, `name@1.2.3`, `name@^1` → {name, version}. */
function parseNpmSpecifier(s: string): { name: string; version?: string } {
  const t = s.trim();
  const at = t.indexOf('@', 1);
  return at < 0 ? { name: t } : { name: t.slice(0, at), version: t.slice(at + 1) };
}

/** Can a user who is neither owner nor group read `p` (every ancestor searchable, the file readable)? */
async function readableByOthers(p: string): Promise<boolean> {
  const st = await fs.stat(p).catch(() => null);
  if (!st || !(st.mode & 0o004)) return false;
  for (let dir = path.dirname(p); ; dir = path.dirname(dir)) {
    const d = await fs.stat(dir).catch(() => null);
    if (!d || !(d.mode & 0o001)) return false;
    if (dir === '/') return true;
  }
}
