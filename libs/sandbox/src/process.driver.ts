import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { SecretMasker } from '@toolplane/platform';
import { OutputCapture } from './output-capture';
import {
  failed,
  fromChannel,
  invalidEnv,
  maskResult,
  messageOf,
  pipesClosed,
  toolEnv,
  type RunError,
  type RunResult,
} from './outcome';
import type { SandboxDriver, SandboxRunOutcome, SandboxRunSpec } from './sandbox.types';
import { createRunDir, prepareWorkRoot, removeRunDir, type RunAs } from './work-dir';

export interface ProcessDriverOptions {
  /** Absolute path of the interpreter; default /usr/bin/python3 (a PATH shim costs ~50 ms a spawn). */
  pythonPath?: string;
  /** Parent of the per-run work dirs; default os.tmpdir()/toolplane-runs. */
  workRoot?: string;
  /** Uid the tool runs as when the runner is root; default 65534 (nobody). */
  runAsUid?: number;
  /** Gid the tool runs as when the runner is root; default 65534 (nogroup). */
  runAsGid?: number;
}

/** Largest result frame (the function's JSON return value) accepted on the result channel. */
export const MAX_RESULT_FRAME_BYTES = 16 * 1024 * 1024;
/** After the process group is killed, how long its pipes get to close before they are destroyed. */
const PIPE_GRACE_MS = 500;
const NOBODY = 65534;
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout fires at once beyond this

interface RunContext {
  pythonPath: string;
  harnessPath: string;
  dir: string;
  runAs: RunAs | undefined;
  job: string;
  nonce: string;
}

/**
 * Runs each call in a fresh `python3 -I -B -u harness.py` in its own process group, work dir and
 * allowlisted environment, dropping to an unprivileged uid when the runner is root.
 *
 * Caller aborts (AbortSignal) end the run with kind 'timeout', type 'AbortError'; close() ends the
 * runs in flight with kind 'crashed', type 'SandboxClosed'. Background processes that leave the
 * process group (setsid) are not tracked: that needs the pid namespace of the bubblewrap driver.
 */
export class ProcessDriver implements SandboxDriver {
  readonly name = 'process';
  readonly isolated = false;
  private readonly pythonPath: string;
  private readonly workRoot: string;
  private readonly runAs: RunAs | undefined;
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<SandboxRunOutcome>>();
  private harness?: Promise<string>;

  constructor(options: ProcessDriverOptions = {}) {
    this.pythonPath = options.pythonPath ?? '/usr/bin/python3';
    this.workRoot = options.workRoot ?? path.join(os.tmpdir(), 'toolplane-runs');
    this.runAs =
      process.getuid?.() === 0 ? { uid: options.runAsUid ?? NOBODY, gid: options.runAsGid ?? NOBODY } : undefined;
  }

  run(spec: SandboxRunSpec, signal?: AbortSignal): Promise<SandboxRunOutcome> {
    const p = this.runOnce(spec, signal);
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  private async runOnce(spec: SandboxRunSpec, signal: AbortSignal | undefined): Promise<SandboxRunOutcome> {
    const started = performance.now();
    const masker = new SecretMasker(spec.maskValues ?? []);
    const done = (r: RunResult): SandboxRunOutcome => ({
      ...maskResult(r, masker),
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    });
    if (this.closing.signal.aborted)
      return done(failed('spawn_failed', 'SandboxClosed', 'the sandbox driver is closed'));
    if (signal?.aborted) return done(failed('timeout', 'AbortError', 'the run was aborted by the caller'));
    const invalid = invalidEnv(spec.env);
    if (invalid) return done(failed('spawn_failed', 'InvalidEnv', invalid));
    if (spec.sourceType && spec.sourceType !== 'python')
      return done(
        failed(
          'spawn_failed',
          'UnsupportedSourceType',
          `the ${this.name} driver runs Python tools only (not ${spec.sourceType})`,
        ),
      );
    const nonce = randomBytes(16).toString('hex');
    let job: string;
    try {
      job = JSON.stringify({
        nonce,
        source: spec.sourceCode,
        function: spec.functionName,
        args: spec.args,
        agent_id: spec.agentId ?? null,
      });
    } catch (err) {
      return done(failed('spawn_failed', 'InvalidArguments', `the arguments are not JSON: ${messageOf(err)}`));
    }
    let dir: string | undefined;
    try {
      const harnessPath = await this.prepareHarness();
      dir = await createRunDir(this.workRoot, this.runAs);
      const ctx: RunContext = { pythonPath: this.pythonPath, harnessPath, dir, runAs: this.runAs, job, nonce };
      return done(await execute(spec, ctx, signal, this.closing.signal, masker));
    } catch (err) {
      return done(failed('spawn_failed', 'SpawnError', `the sandbox could not start: ${messageOf(err)}`));
    } finally {
      if (dir) await removeRunDir(dir).catch(() => undefined);
    }
  }

  private prepareHarness(): Promise<string> {
    this.harness ??= prepareWorkRoot(this.workRoot, this.runAs).catch((err: unknown) => {
      this.harness = undefined; // retry on the next call
      throw err;
    });
    return this.harness;
  }
}

function execute(
  spec: SandboxRunSpec,
  ctx: RunContext,
  caller: AbortSignal | undefined,
  closing: AbortSignal,
  masker: SecretMasker,
): Promise<RunResult> {
  return new Promise((resolve) => {
    // Masked before cut: each stream keeps the longest secret's length past its limit.
    const stdout = new OutputCapture(spec.limits.stdoutBytes + masker.lookaheadBytes);
    const stderr = new OutputCapture(spec.limits.stderrBytes + masker.lookaheadBytes);
    const channel = new OutputCapture(MAX_RESULT_FRAME_BYTES);
    let stop: RunError | undefined;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let settled = false;

    let child: ChildProcess;
    try {
      child = spawn(ctx.pythonPath, ['-I', '-B', '-u', ctx.harnessPath], {
        cwd: ctx.dir,
        env: toolEnv(spec.env, ctx.dir),
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
        detached: true, // own session and process group: one kill reaches every descendant
        ...(ctx.runAs ?? {}),
      });
    } catch (err) {
      resolve(failed('spawn_failed', 'SpawnError', `cannot start ${ctx.pythonPath}: ${messageOf(err)}`));
      return;
    }
    const pid = child.pid;
    const pipes = [child.stdout, child.stderr, child.stdio[3]].filter((s): s is Readable => s != null);

    const killGroup = (): void => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already empty
      }
    };
    const halt = (reason: RunError): void => {
      if (stop || settled) return;
      stop = reason;
      killGroup();
    };
    const onCaller = (): void =>
      halt({ kind: 'timeout', type: 'AbortError', message: 'the run was aborted by the caller' });
    const onClosing = (): void =>
      halt({ kind: 'crashed', type: 'SandboxClosed', message: 'the sandbox driver was closed during the run' });
    const timer = setTimeout(
      () =>
        halt({
          kind: 'timeout',
          type: 'TimeoutError',
          message: `Function ${spec.functionName} timed out after ${spec.timeoutMs} ms`,
        }),
      Math.min(Math.max(spec.timeoutMs, 0), MAX_TIMER_MS),
    );
    caller?.addEventListener('abort', onCaller, { once: true });
    closing.addEventListener('abort', onClosing, { once: true });

    const finish = (result: RunResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCaller);
      closing.removeEventListener('abort', onClosing);
      for (const p of pipes) p.destroy();
      resolve(result);
    };

    const capture = (into: OutputCapture) => (chunk: Buffer) => {
      into.push(chunk);
      if (stdout.total + stderr.total > spec.limits.maxOutputBytes) {
        halt({
          kind: 'output_limit',
          type: 'OutputLimitExceeded',
          message: `the tool wrote more than ${spec.limits.maxOutputBytes} bytes of output`,
        });
      }
    };
    child.stdout?.on('data', capture(stdout));
    child.stderr?.on('data', capture(stderr));
    child.stdio[3]?.on('data', (chunk: Buffer) => {
      channel.push(chunk);
      if (channel.truncated)
        halt({
          kind: 'output_limit',
          type: 'OutputLimitExceeded',
          message: `the result is larger than ${MAX_RESULT_FRAME_BYTES} bytes`,
        });
    });
    for (const p of pipes) p.on('error', () => undefined);
    child.stdin?.on('error', () => undefined); // EPIPE when the interpreter dies before reading the job
    child.stdin?.end(ctx.job);

    child.once('error', (err) => {
      if (pid !== undefined) return; // only spawn failures matter here; exit reports the rest
      finish(failed('spawn_failed', 'SpawnError', `cannot start ${ctx.pythonPath}: ${messageOf(err)}`));
    });
    child.once('exit', (code, sig) => {
      exitCode = code;
      exitSignal = sig;
      killGroup(); // background children die with the run, success or not
      void pipesClosed(pipes, PIPE_GRACE_MS).then(() => {
        const out = stdout.maskedText(spec.limits.stdoutBytes, masker);
        const err = stderr.maskedText(spec.limits.stderrBytes, masker);
        const streams = {
          stdout: out.text,
          stderr: err.text,
          stdoutTruncated: out.truncated,
          stderrTruncated: err.truncated,
        };
        const base = { ...streams, exitCode, signal: exitSignal };
        finish(stop ? { status: 'error', error: stop, ...base } : fromChannel(channel.bytes(), ctx.nonce, base));
      });
    });
  });
}
