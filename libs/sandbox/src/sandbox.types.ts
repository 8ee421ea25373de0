/** Byte limits for one run. */
export interface SandboxLimits {
  /** Bytes of stdout kept; the rest is drained and dropped (stdoutTruncated). */
  stdoutBytes: number;
  /** Bytes of stderr kept; the rest is drained and dropped (stderrTruncated). */
  stderrBytes: number;
  /** Total stdout + stderr bytes written before the run is killed (error kind 'output_limit'). */
  maxOutputBytes: number;
}

/** Kernel-enforced limits of one call in an isolated sandbox (BwrapDriver); unset = the driver default. */
export interface IsolationLimits {
  /** Address space (RLIMIT_AS). */
  memoryBytes?: number;
  /** CPU time (RLIMIT_CPU): SIGXCPU, then SIGKILL one second later. */
  cpuSeconds?: number;
  /** Processes and threads of the call at once (RLIMIT_NPROC, counted inside the sandbox). */
  processes?: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  openFiles?: number;
  /** Largest file the call may write (RLIMIT_FSIZE). */
  fileBytes?: number;
  /** Size of the call's work dir (a tmpfs on /tmp). */
  workDirBytes?: number;
}

export interface SandboxRunSpec {
  runId: string;
  sourceCode: string;
  functionName: string;
  args: Record<string, unknown>;
  /** The resolved env for this call; nothing else from the runner reaches the tool. */
  env: Record<string, string>;
  timeoutMs: number;
  limits: SandboxLimits;
  agentId?: string;
  /** Kernel limits (BwrapDriver); ProcessDriver ignores them. */
  isolation?: IsolationLimits;
  /**
   * Network (BwrapDriver): a network namespace of the call's own, reaching out through
   * slirp4netns under the egress policy (default false: an empty namespace, loopback only).
   */
  network?: boolean;
  /**
   * Secret values (the call's masked env values): masked in stdout, stderr, the return value and
   * error messages before anything is cut. Values shorter than 4 characters are not masked.
   */
  maskValues?: string[];
  /** Let package builds run build scripts (npm lifecycle scripts; sdists when pip is limited to wheels). */
  buildScripts?: boolean;
  /** pip requirement specifiers (`name`, `name==1.0`, `name>=2`); the call runs in their virtualenv. */
  pipRequirements?: string[];
  /** `python` (default), or `typescript` / `javascript`: run on Node (BwrapDriver only). */
  sourceType?: string;
  /** npm specifiers (`name`, `name@1.2.3`, `name@^1`) for TypeScript/JavaScript tools: their node_modules tree. */
  npmRequirements?: string[];
}

/**
 * Why a run failed.
 * - exception: the tool raised (type = Python exception class name).
 * - timeout: the deadline passed (type 'TimeoutError') or the caller's AbortSignal fired (type 'AbortError').
 * - output_limit: stdout + stderr exceeded limits.maxOutputBytes, or the result frame was too large.
 * - crashed: the interpreter died without a result (killed by a signal, non-zero exit).
 * - protocol: the result channel did not carry exactly one well-formed frame with this run's nonce.
 * - spawn_failed: the sandbox could not be started (bad python path, work dir, driver closed).
 * - dependency_failed: the call's requirements could not be installed (type 'DependencyInstallFailed').
 */
export type SandboxErrorKind =
  | 'exception'
  | 'timeout'
  | 'output_limit'
  | 'crashed'
  | 'protocol'
  | 'spawn_failed'
  | 'dependency_failed';

export interface SandboxRunOutcome {
  status: 'success' | 'error';
  /** JSON-safe function return (success). */
  value?: unknown;
  error?: { kind: SandboxErrorKind; type: string; message: string };
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  /** Whether a warm sandbox served the call (BwrapDriver). */
  warm?: boolean;
  /** Time spent waiting for a sandbox slot (BwrapDriver). */
  queueMs?: number;
}

/** What a call's environment depends on: its source type, its requirements, whether build scripts may run. */
export type EnvironmentSpec = Pick<
  SandboxRunSpec,
  'sourceType' | 'pipRequirements' | 'npmRequirements' | 'buildScripts'
>;

/** The state of a call's environment (its virtualenv or node_modules tree) on this runner. */
export interface EnvironmentState {
  /** The environment's key, a hash of its requirements and runtime (`py-…`, `npm-…`); null: no packages, nothing to build. */
  key: string | null;
  /** none: never built here nor found on disk; building; ready; failed (the last build here). */
  status: 'none' | 'building' | 'ready' | 'failed';
  /** When the status began (epoch ms), when known. */
  since?: number;
  /** What the build is doing (pip's last line, "npm: installing N packages"). */
  progress?: string;
  /** Why the last build failed, and the package that failed when the builder could tell. */
  error?: { message: string; package?: string };
}

export interface PrepareOptions {
  /** Wait at most this long for the build to end (default 0: answer at once; the build goes on either way). */
  waitMs?: number;
  /** Stop waiting when aborted (the build goes on). */
  signal?: AbortSignal;
  /**
   * A build that failed is started again only once this long has passed since it failed (before,
   * the failure is the answer); default 0: at once. Nothing retries a build on its own.
   */
  retryFailedAfterMs?: number;
}

export interface SandboxDriver {
  readonly name: string;
  /** False when the driver runs tools without namespace/seccomp isolation (the unsafe mode). */
  readonly isolated: boolean;
  /** Never rejects: every failure is an outcome with status 'error'. */
  run(spec: SandboxRunSpec, signal?: AbortSignal): Promise<SandboxRunOutcome>;
  /** The state of the call's environment; never starts a build. Optional: drivers without environments have none. */
  environmentStatus?(spec: EnvironmentSpec): Promise<EnvironmentState>;
  /**
   * Starts (or joins) the build of the call's environment in the background, one build per
   * environment at a time; waits as `options` say; answers the state then. Never rejects for the
   * build's sake (a failure is the state `failed`).
   */
  prepareEnvironment?(spec: EnvironmentSpec, options?: PrepareOptions): Promise<EnvironmentState>;
  /** Kills the runs in flight and refuses new ones. */
  close(): Promise<void>;
}
