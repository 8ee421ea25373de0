import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import { EgressPolicy, SecretMasker } from '@toolplane/platform';
import { failed, invalidEnv, maskResult, messageOf, toolEnv, type RunResult } from './outcome';
import { MAX_RESULT_FRAME_BYTES } from './process.driver';
import type {
  EnvironmentSpec,
  EnvironmentState,
  IsolationLimits,
  PrepareOptions,
  SandboxDriver,
  SandboxRunOutcome,
  SandboxRunSpec,
} from './sandbox.types';
import type { SlotLimits } from './slot';
import type { PipIndexOptions } from './venv.builder';
import { NODE_MOUNT, NPM_MOUNT, type NpmSourceOptions } from './npm.builder';
import { prepareScript } from './typescript';
import { EnvironmentStore, isNodeSource, type Environment } from './environment-store';
import { IsolationPolicy, IsolationUnavailableError } from './isolation';
import type { Slot } from './slot';
import { SlotPool, type PoolEnvironment, type PoolOptions, type PoolStats } from './slot-pool';
import type { CgroupMode, CgroupOptions } from './cgroups';

export { IsolationUnavailableError } from './isolation';
export type { PoolOptions } from './slot-pool';

const NOBODY = 65534;
const WORK_DIR = '/tmp';

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
  pool?: Partial<PoolOptions> & {
    /**
     * More environments to keep warm: each one's virtualenv is built (in the background, after
     * `init()`) and `warm` of its slots are kept ready like the default environment's.
     */
    warmEnvironments?: WarmEnvironment[];
  };
  /** Per-call cgroups (`auto`: when delegated; see cgroups.ts). */
  cgroups?: CgroupOptions;
  /**
   * Network-enabled calls (`spec.network`): each in a network namespace of its own through
   * slirp4netns, with the egress policy (loopback, private, link-local, CGNAT, multicast,
   * metadata… refused unless `allow` lists them). `enabled`: init() refuses to start without
   * slirp4netns. The policy applies to package builds too.
   */
  network?: { enabled?: boolean; slirpPath?: string; allow?: string[] };
  /** Virtualenvs and node_modules trees: byte budget (LRU eviction) and the idle time that protects an environment. */
  environments?: { maxBytes?: number; minIdleMs?: number };
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
  /**
   * Package-index settings of every build (pip and npm): `caFile`, a CA (PEM) trusted besides the
   * system's (a corporate proxy's); `proxy`, the HTTP(S) proxy builds reach their index through
   * (then their network reaches that proxy only). Never given to tool calls.
   */
  build?: { caFile?: string; proxy?: string };
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

/** Node's own memory beside its heap (code, buffers): added to a Node call's cgroup memory limit. */
export const NODE_CGROUP_HEADROOM = 128 * 1024 * 1024;

export interface DriverStats extends PoolStats {
  venvBuilds: number;
  npmBuilds: number;
  /** Environment builds (virtualenvs, node_modules trees) that failed, and those running now. */
  environmentBuildsFailed: number;
  environmentsBuilding: number;
  /** Environments (virtualenvs, node_modules trees) evicted under the byte budget. */
  environmentsEvicted: number;
}

/**
 * Runs each call in a forked child of a warm slot (python/slot.py): pid 1 of a bubblewrap sandbox
 * with its own user, pid, network, ipc, uts and mount namespaces, read-only system dirs, running
 * as an unprivileged host uid. Per call: fresh size-capped tmpfs mounts on /tmp and /dev/shm,
 * its cgroup limits (or rlimits), no capabilities, no new privileges, the seccomp filter, the
 * declared env only; when the call ends every process it started is killed and the slot proves
 * itself clean or is destroyed. Composes the three parts: the isolation policy (how a sandbox is
 * made), the slot pool (warm sandboxes per environment) and the environment store (virtualenvs,
 * node_modules trees).
 */
export class BwrapDriver implements SandboxDriver {
  readonly name = 'bwrap';
  readonly isolated = true;
  private readonly bwrapPath: string;
  private readonly pythonPath: string;
  private readonly workRoot: string;
  private readonly runAs?: { uid: number; gid: number };
  private readonly limits: Required<IsolationLimits>;
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<SandboxRunOutcome>>();
  private isolation?: IsolationPolicy;
  private pool?: SlotPool;
  private store?: EnvironmentStore;

  constructor(private readonly options: BwrapDriverOptions = {}) {
    this.bwrapPath = options.bwrapPath ?? '/usr/bin/bwrap';
    this.pythonPath = options.pythonPath ?? '/usr/bin/python3';
    this.workRoot = options.workRoot ?? path.join(os.tmpdir(), 'toolplane-runs');
    this.runAs =
      process.getuid?.() === 0 ? { uid: options.runAsUid ?? NOBODY, gid: options.runAsGid ?? NOBODY } : undefined;
    this.limits = { ...DEFAULT_ISOLATION_LIMITS, ...options.limits };
  }

  /** How calls are limited: per-call cgroups (v2 or v1), or per-process rlimits only ('none', with the reason). */
  get cgroups(): { mode: CgroupMode; reason: string } {
    return {
      mode: this.isolation?.cgroups.mode ?? 'none',
      reason: this.isolation?.cgroups.reason ?? 'not initialized',
    };
  }

  /**
   * Checks that isolation works here (bubblewrap, user namespaces, the seccomp filter, cgroups,
   * slirp4netns when network is enabled), writes the support files and warms the default
   * environment. Throws IsolationUnavailableError.
   */
  async init(): Promise<void> {
    const egress = new EgressPolicy({ allow: this.options.network?.allow ?? [] });
    this.isolation = await IsolationPolicy.prepare({
      bwrapPath: this.bwrapPath,
      workRoot: this.workRoot,
      runAs: this.runAs,
      cgroups: this.options.cgroups,
      egress,
      slirpPath: this.options.network?.slirpPath,
      requireNetwork: this.options.network?.enabled,
    });
    const isolation = this.isolation;
    const poolOptions: PoolOptions = {
      maxPerEnvironment: 16,
      maxTotal: 64,
      warm: 2,
      warmNetwork: 0,
      idleTtlMs: 300_000,
      preload: [],
      ...this.options.pool,
    };
    this.pool = new SlotPool(poolOptions, (env) =>
      isolation.slotSpawn({
        python: env.python,
        venvDir: env.venvDir,
        network: env.network,
        preload: poolOptions.preload,
        workBytes: env.workBytes,
        node: env.node,
        npmDir: env.npmDir,
      }),
    );
    let first: Slot;
    try {
      first = await this.pool.prime(
        this.poolEnv({ key: 'default', python: this.pythonPath }, false, this.limits.workDirBytes),
      );
    } catch (e) {
      await this.pool.close();
      await isolation.close();
      throw new IsolationUnavailableError(`a bubblewrap sandbox cannot start here: ${messageOf(e)}`);
    }
    const pool = this.pool;
    this.store = new EnvironmentStore({
      workRoot: this.workRoot,
      bwrapPath: this.bwrapPath,
      supportDir: isolation.supportDir,
      python: this.pythonPath,
      pythonVersion: first.python,
      runAs: this.runAs,
      pip: this.options.pip ?? {},
      pipTimeoutMs: this.options.pipTimeoutMs ?? 300_000,
      nodePath: this.options.nodePath,
      npmDir: this.options.npmDir,
      npm: this.options.npm ?? {},
      npmTimeoutMs: this.options.npmTimeoutMs ?? 300_000,
      network: isolation.buildNetwork,
      build: this.options.build,
      maxBytes: this.options.environments?.maxBytes ?? 10 * 1024 ** 3,
      minIdleMs: this.options.environments?.minIdleMs ?? 600_000,
      inUse: (dir) => pool.uses(dir),
    });
    await this.store.init();
    await pool.warmUp(this.poolEnv({ key: 'default', python: this.pythonPath }, false, this.limits.workDirBytes));
    if (poolOptions.warmNetwork > 0 && isolation.networkAvailable)
      void pool
        .warmUp(this.poolEnv({ key: 'default', python: this.pythonPath }, true, this.limits.workDirBytes))
        .catch(() => undefined);
    for (const w of this.options.pool?.warmEnvironments ?? []) void this.keepWarm(w);
    pool.start();
  }

  stats(): DriverStats {
    const empty: PoolStats = {
      slots: 0,
      idle: 0,
      busy: 0,
      environments: 0,
      warmHits: 0,
      warmMisses: 0,
      slotsStarted: 0,
      slotsKilled: 0,
      slotsDirty: 0,
    };
    const store = this.store;
    return {
      ...(this.pool?.stats() ?? empty),
      venvBuilds: store?.builds ?? 0,
      npmBuilds: store?.npmBuilds ?? 0,
      environmentBuildsFailed: store?.failedBuilds ?? 0,
      environmentsBuilding: store?.buildsInProgress ?? 0,
      environmentsEvicted: store?.evictions ?? 0,
    };
  }

  run(spec: SandboxRunSpec, signal?: AbortSignal): Promise<SandboxRunOutcome> {
    const p = this.runOnce(spec, signal);
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  /** The state of the call's environment (its virtualenv or node_modules tree); starts nothing. */
  environmentStatus(spec: EnvironmentSpec): Promise<EnvironmentState> {
    if (!this.store) return Promise.resolve({ key: null, status: 'none' });
    return this.store.status(spec);
  }

  /**
   * Starts (or joins) the build of the call's environment in the background (see PrepareOptions),
   * so that a caller that limits how many calls run at once never holds a place while a virtualenv
   * is built, and a call need not wait for a build at all.
   */
  prepareEnvironment(spec: EnvironmentSpec, options: PrepareOptions = {}): Promise<EnvironmentState> {
    if (!this.store || this.closing.signal.aborted) return this.environmentStatus(spec);
    return this.store.prepare(spec, options);
  }

  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([...this.inFlight]);
    await this.pool?.close();
    await this.isolation?.close();
  }

  private async runOnce(spec: SandboxRunSpec, signal: AbortSignal | undefined): Promise<SandboxRunOutcome> {
    const started = performance.now();
    const masker = new SecretMasker(spec.maskValues ?? []);
    const done = (r: RunResult, extra: Partial<SandboxRunOutcome> = {}): SandboxRunOutcome => ({
      ...maskResult(r, masker),
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...extra,
    });
    if (this.closing.signal.aborted || !this.pool || !this.isolation)
      return done(failed('spawn_failed', 'SandboxClosed', 'the sandbox driver is closed or not initialized'));
    if (signal?.aborted) return done(failed('timeout', 'AbortError', 'the run was aborted by the caller'));
    const invalid = invalidEnv(spec.env);
    if (invalid) return done(failed('spawn_failed', 'InvalidEnv', invalid));
    if (spec.network === true && !this.isolation.networkAvailable)
      return done(
        failed(
          'spawn_failed',
          'NetworkUnavailable',
          'network-enabled sandboxes need slirp4netns, which is not installed on this runner',
        ),
      );
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
      job = Buffer.from(
        JSON.stringify({
          nonce,
          env,
          limits,
          source: spec.sourceCode,
          function: spec.functionName,
          args: spec.args,
          agent_id: spec.agentId ?? null,
          ...node,
        }),
      );
    } catch (e) {
      return done(failed('spawn_failed', 'InvalidArguments', `the arguments are not JSON: ${messageOf(e)}`));
    }
    let env: PoolEnvironment;
    try {
      env = await this.environmentFor(spec);
    } catch (e) {
      return done(failed('dependency_failed', 'DependencyInstallFailed', messageOf(e)));
    }
    const queued = performance.now();
    let lease: Awaited<ReturnType<SlotPool['acquire']>>;
    try {
      lease = await this.pool.acquire(env);
    } catch (e) {
      return done(failed('spawn_failed', 'SpawnError', `the sandbox could not start: ${messageOf(e)}`));
    }
    const { slot, warm } = lease;
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
          cgroupLimits: {
            memoryBytes: lim.memoryBytes + (onNode ? NODE_CGROUP_HEADROOM : 0),
            processes: lim.processes,
          },
          masker: masker.active ? masker : undefined,
        },
        signal,
        this.closing.signal,
      );
      return done(r, { warm, queueMs });
    } finally {
      // The reply may come before the call's end (see Slot): the slot goes back to the pool only
      // once every process of the call is dead, its streams are closed off by the sentinel and it
      // has proved itself clean.
      void slot.idle().then(lease.release);
    }
  }

  private async environmentFor(spec: SandboxRunSpec): Promise<PoolEnvironment> {
    const store = this.store!;
    const network = spec.network === true;
    const workBytes = spec.isolation?.workDirBytes ?? this.limits.workDirBytes;
    const scripts = spec.buildScripts === true;
    const environment = isNodeSource(spec.sourceType)
      ? await store.node(spec.npmRequirements ?? [], scripts)
      : await store.python(spec.pipRequirements ?? [], scripts);
    return this.poolEnv(environment, network, workBytes);
  }

  private poolEnv(e: Environment, network: boolean, workBytes: number): PoolEnvironment {
    const suffix = `${network ? '+net' : ''}${workBytes !== this.limits.workDirBytes ? `+work${workBytes}` : ''}`;
    return { ...e, key: `${e.key}${suffix}`, network, workBytes };
  }

  /** Builds a configured environment (its virtualenv) and keeps `warm` of its slots ready. */
  private async keepWarm(w: WarmEnvironment): Promise<void> {
    try {
      const env = await this.environmentFor({
        pipRequirements: w.pipRequirements,
        network: w.network,
      } as SandboxRunSpec);
      if (this.closing.signal.aborted) return;
      this.pool!.setWarmTarget(env.key, w.warm);
      await this.pool!.warmUp(env);
    } catch (e) {
      this.options.onWarmFailure?.(
        `${w.pipRequirements.join(' ') || '(no requirements)'}${w.network ? ' +network' : ''}: ${messageOf(e)}`,
      );
    }
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The Node part of a slot job: JavaScript (types stripped here, never run here) and the parameter order. */
function nodeJob(spec: SandboxRunSpec, memoryBytes: number): Record<string, unknown> {
  const { code, params } = prepareScript(spec.sourceCode, spec.functionName);
  return {
    runtime: 'node',
    source: code,
    params,
    module_dir: NPM_MOUNT,
    node: { path: NODE_MOUNT, heap_mb: Math.max(16, Math.floor(memoryBytes / (1024 * 1024))) },
  };
}
