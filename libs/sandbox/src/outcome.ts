import type { Readable } from 'node:stream';
import type { SecretMasker } from '@toolplane/platform';
import { parseResultFrame } from './result-frame';
import type { SandboxErrorKind, SandboxRunOutcome } from './sandbox.types';

export type RunError = NonNullable<SandboxRunOutcome['error']>;
export type RunResult = Omit<SandboxRunOutcome, 'durationMs'>;

const TOOL_PATH = '/usr/local/bin:/usr/bin:/bin';

export function fromChannel(
  raw: Buffer,
  nonce: string,
  base: Omit<RunResult, 'status' | 'value' | 'error'>,
): RunResult {
  const parsed = parseResultFrame(raw, nonce);
  if (parsed.ok) {
    const f = parsed.frame;
    if (f.status === 'success') return { status: 'success', value: f.value, ...base };
    return { status: 'error', error: { kind: 'exception', type: f.type, message: f.message }, ...base };
  }
  if (raw.length === 0 && (base.exitCode !== 0 || base.signal !== null)) {
    const how = base.signal ? `was killed by ${base.signal}` : `exited with code ${base.exitCode}`;
    return {
      status: 'error',
      error: { kind: 'crashed', type: 'SandboxCrashed', message: `the interpreter ${how} before returning a result` },
      ...base,
    };
  }
  return { status: 'error', error: { kind: 'protocol', type: 'ProtocolError', message: parsed.reason }, ...base };
}

/** The whole environment of the tool: an allowlist plus the call's resolved env. */
export function toolEnv(env: Record<string, string>, dir: string): Record<string, string> {
  return {
    PATH: TOOL_PATH,
    LANG: 'C.UTF-8',
    PYTHONIOENCODING: 'utf-8',
    PYTHONDONTWRITEBYTECODE: '1',
    ...env,
    HOME: dir, // the work dir is removed after the run: HOME and TMPDIR must stay inside it
    TMPDIR: dir,
  };
}

export function invalidEnv(env: Record<string, string>): string | undefined {
  for (const [k, v] of Object.entries(env)) {
    if (k === '' || k.includes('=') || k.includes('\0'))
      return `invalid environment variable name ${JSON.stringify(k)}`;
    if (typeof v !== 'string' || v.includes('\0'))
      return `environment variable ${k} must be a string without NUL bytes`;
  }
  return undefined;
}

export function pipesClosed(pipes: Readable[], graceMs: number): Promise<void> {
  const closed = pipes.map((p) =>
    p.closed || p.destroyed ? Promise.resolve() : new Promise<void>((r) => p.once('close', () => r())),
  );
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
  return Promise.race([Promise.all(closed).then(() => undefined), grace]).finally(() => clearTimeout(timer));
}

export function failed(kind: SandboxErrorKind, type: string, message: string): RunResult {
  return {
    status: 'error',
    error: { kind, type, message },
    stdout: '',
    stderr: '',
    stdoutTruncated: false,
    stderrTruncated: false,
    exitCode: null,
    signal: null,
  };
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An outcome with the call's secrets masked in its return value and error message. */
export function maskResult(r: RunResult, masker: SecretMasker): RunResult {
  if (!masker.active) return r;
  return {
    ...r,
    ...(r.value !== undefined ? { value: masker.value(r.value) } : {}),
    ...(r.error
      ? { error: { ...r.error, message: masker.text(r.error.message), type: masker.text(r.error.type) } }
      : {}),
  };
}
