/** Byte limits for one run. */
export interface SandboxLimits {
  /** Bytes of stdout kept; the rest is drained and dropped (stdoutTruncated). */
  stdoutBytes: number;
  /** Bytes of stderr kept; the rest is drained and dropped (stderrTruncated). */
  stderrBytes: number;
  /** Total stdout + stderr bytes written before the run is killed (error kind 'output_limit'). */
  maxOutputBytes: number;
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
}

/**
 * Why a run failed.
 * - exception: the tool raised (type = Python exception class name).
 * - timeout: the deadline passed (type 'TimeoutError') or the caller's AbortSignal fired (type 'AbortError').
 * - output_limit: stdout + stderr exceeded limits.maxOutputBytes, or the result frame was too large.
 * - crashed: the interpreter died without a result (killed by a signal, non-zero exit).
 * - protocol: the result channel did not carry exactly one well-formed frame with this run's nonce.
 * - spawn_failed: the sandbox could not be started (bad python path, work dir, driver closed).
 */
export type SandboxErrorKind = 'exception' | 'timeout' | 'output_limit' | 'crashed' | 'protocol' | 'spawn_failed';

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
}

export interface SandboxDriver {
  readonly name: string;
  /** Never rejects: every failure is an outcome with status 'error'. */
  run(spec: SandboxRunSpec, signal?: AbortSignal): Promise<SandboxRunOutcome>;
  /** Kills the runs in flight and refuses new ones. */
  close(): Promise<void>;
}
