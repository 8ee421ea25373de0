import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '@toolplane/contracts';
import { parseResultFrame } from './result-frame';
import { HARNESS_PATH } from './work-dir';
import { z } from 'zod';

/**
 * The launcher of reused remote sandboxes (runner-e2b, runner-modal), python/launcher.py: what it
 * is told and what it answers. It and the harnesses are uploaded into a sandbox as they are.
 */
export const LAUNCHER_PATH = path.resolve(__dirname, '..', 'python', 'launcher.py');
const NODE_HARNESS_PATH = path.join(path.dirname(HARNESS_PATH), 'node_harness.cjs');

/** Largest result frame (the function's JSON return value), as runner-local. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** The launcher found every lane of the sandbox taken (another replica uses it): nothing ran. */
export const EXIT_BUSY = 75;

/** The files every sandbox gets once, at setup (name → content), and their digest (part of the sandbox key: a new version never reuses old sandboxes). */
export const SUPPORT_FILES: ReadonlyArray<{ name: string; data: Buffer }> = [
  { name: 'launcher.py', data: readFileSync(LAUNCHER_PATH) },
  { name: 'harness.py', data: readFileSync(HARNESS_PATH) },
  { name: 'node_harness.cjs', data: readFileSync(NODE_HARNESS_PATH) },
];
export const SUPPORT_DIGEST = SUPPORT_FILES.reduce(
  (h, f) => h.update(f.name).update('\0').update(f.data),
  createHash('sha256'),
)
  .digest('hex')
  .slice(0, 12);

/** Where things live in a sandbox. */
export class RemoteSandboxLayout {
  constructor(readonly state: string) {}

  get support(): string {
    return `${this.state}/harness`;
  }

  file(name: string): string {
    return `${this.support}/${name}`;
  }

  callDir(id: string): string {
    return `${this.state}/calls/${id}`;
  }

  workDir(id: string): string {
    return `${this.state}/work/${id}`;
  }

  envDir(requirementsHash: string): string {
    return `${this.state}/envs/${requirementsHash}`;
  }

  command(python: string, mode: 'setup' | 'run' | 'prove', input: string): string {
    return `exec ${python} -I -B -u ${this.file('launcher.py')} ${mode} ${input}`;
  }
}

/**
 * The time (sandbox clock) of a sandbox's last proof, and what the launcher compares the next one
 * with (the sandbox's own processes and IPC objects, the watched paths' identities): opaque here,
 * handed back to the launcher as it was reported.
 */
export interface Proof {
  provedAt: number;
  state: Record<string, unknown>;
}

const ProofState = z.object({
  proved_at: z.number(),
  baseline: z.array(z.tuple([z.number(), z.string()])),
  baseline_ipc: z.array(z.string()),
  roots: z.record(z.string(), z.array(z.string())),
});

export const SetupReport = z.object({
  v: z.literal(1),
  nonce: z.string(),
  dirty: z.array(z.string()),
  proved_at: z.number().nullable(),
  node: z.boolean().optional(),
  python: z.boolean().optional(),
  uid: z.number().optional(),
  proof: ProofState.optional(),
  install: z
    .object({
      ok: z.boolean(),
      tool: z.string().optional(),
      timed_out: z.boolean().optional(),
      output: z.array(z.string()).optional(),
    })
    .optional(),
});
export type SetupReport = z.infer<typeof SetupReport>;

export const RunReport = z.object({
  v: z.literal(1),
  nonce: z.string(),
  lane: z.number().nullable(),
  exit: z.number().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  output_limit: z.boolean(),
  frame: z.string().nullable(),
  frame_too_large: z.boolean(),
  stdout_bytes: z.number(),
  stderr_bytes: z.number(),
  dirty: z.array(z.string()),
  proved_at: z.number().nullable(),
});
export type RunReport = z.infer<typeof RunReport>;

/** What the launcher needs for one call (call.json); the harness's job travels beside it (job.json). */
export interface CallSpec {
  nonce: string;
  runtime: 'python' | 'node';
  python: string;
  workDir: string;
  timeoutMs: number;
  maxOutputBytes: number;
  envKeys: string[];
  lanes: number;
  proof: Proof;
}

/** A runner's launcher settings: the interpreters, the uid tools run as, the paths whose changes make a sandbox dirty. */
export interface LauncherSettings {
  python: string;
  node: string;
  toolUid: number;
  watch: string[];
}

/** The settings every launcher input shares. */
export function launcherBase(c: LauncherSettings, layout: RemoteSandboxLayout) {
  return {
    state_dir: layout.state,
    python: c.python,
    node: c.node,
    tool_uid: c.toolUid,
    watch: c.watch,
  };
}

export function callJson(c: LauncherSettings, layout: RemoteSandboxLayout, s: CallSpec): string {
  return JSON.stringify({
    ...launcherBase(c, layout),
    nonce: s.nonce,
    lanes: s.lanes,
    runtime: s.runtime,
    python: s.python,
    harness: layout.file('harness.py'),
    node_harness: layout.file('node_harness.cjs'),
    work_dir: s.workDir,
    timeout_ms: s.timeoutMs,
    max_output_bytes: s.maxOutputBytes,
    max_frame_bytes: MAX_FRAME_BYTES,
    env_keys: s.envKeys,
    proof: proofJson(s.proof),
  });
}

/** A proof as the launcher reads it. */
export function proofJson(p: Proof): Record<string, unknown> {
  return { ...p.state, proved_at: p.provedAt };
}

/** The proof of a setup or prove report (undefined: the sandbox did not prove itself clean). */
export function proofOf(r: SetupReport): Proof | undefined {
  return r.proof && r.proved_at !== null && r.dirty.length === 0
    ? { provedAt: r.proof.proved_at, state: r.proof }
    : undefined;
}

/** Parses a launcher report; undefined when it is not one (then nothing about the sandbox can be trusted). */
export function parseReport<T extends z.ZodType>(schema: T, text: string, nonce: string): z.infer<T> | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(raw);
  if (!r.success) return undefined;
  return (r.data as { nonce: string }).nonce === nonce ? r.data : undefined;
}

/** How a call ended, as its launcher report tells. */
export interface RemoteOutcome {
  status: 'success' | 'error';
  value?: unknown;
  error?: {
    code:
      | ErrorCode.EXECUTION_TIMEOUT
      | ErrorCode.OUTPUT_LIMIT_EXCEEDED
      | ErrorCode.TOOL_EXCEPTION
      | ErrorCode.SANDBOX_FAILURE;
    type: string;
    message: string;
  };
}

/** The call's result from the launcher's report: the harness's frame, or why there is none. */
/** The call's result from the launcher's report: the harness's frame, or why there is none. */
export function outcomeOf(
  report: RunReport,
  nonce: string,
  call: { functionName: string; timeoutMs: number },
  maxOutputBytes: number,
): RemoteOutcome {
  if (report.timed_out)
    return {
      status: 'error',
      error: {
        code: ErrorCode.EXECUTION_TIMEOUT,
        type: 'TimeoutError',
        message: `Function ${call.functionName} timed out after ${call.timeoutMs} ms`,
      },
    };
  if (report.output_limit)
    return {
      status: 'error',
      error: {
        code: ErrorCode.OUTPUT_LIMIT_EXCEEDED,
        type: 'OutputLimitExceeded',
        message: `the tool wrote more than ${maxOutputBytes} bytes of output`,
      },
    };
  if (report.frame_too_large)
    return {
      status: 'error',
      error: {
        code: ErrorCode.OUTPUT_LIMIT_EXCEEDED,
        type: 'OutputLimitExceeded',
        message: `the result is larger than ${MAX_FRAME_BYTES} bytes`,
      },
    };
  const raw = Buffer.from(report.frame ?? '', 'utf8');
  const parsed = parseResultFrame(raw, nonce);
  if (parsed.ok) {
    const f = parsed.frame;
    return f.status === 'success'
      ? { status: 'success', value: f.value }
      : { status: 'error', error: { code: ErrorCode.TOOL_EXCEPTION, type: f.type, message: f.message } };
  }
  if (raw.length === 0 && (report.exit !== 0 || report.signal !== null)) {
    const how = report.signal ? `was killed by ${report.signal}` : `exited with code ${report.exit}`;
    return {
      status: 'error',
      error: {
        code: ErrorCode.SANDBOX_FAILURE,
        type: 'SandboxCrashed',
        message: `the interpreter ${how} before returning a result`,
      },
    };
  }
  return { status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'ProtocolError', message: parsed.reason } };
}
