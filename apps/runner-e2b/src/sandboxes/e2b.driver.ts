import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { SecretMasker } from '@toolplane/platform';
import { DependencyInstallError, outcomeOf, OutputCapture, prepareScript, toolEnv } from '@toolplane/sandbox';
import type { CommandHandle } from 'e2b';
import { randomBytes } from 'node:crypto';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { exitCodeOf, isSandboxGone, providerError, scrub } from './e2b.api';
import { environmentKeys, step, type E2bSandboxes } from './environments';
import { callJson, EXIT_BUSY, parseReport, RunReport, type SandboxLayout } from './launcher';
import { type Environment, type EnvironmentRequest, type SandboxPool, type Slot } from './sandbox-pool';

/** One call as runner-e2b runs it. */
export interface E2bCall {
  runId: string;
  toolId: string;
  functionName: string;
  sourceCode: string;
  sourceType: string;
  args: Record<string, unknown>;
  agentId?: string;
  /** The call's final env (credentials resolved it): reaches the tool through the command's envs only. */
  env: Record<string, string>;
  maskValues: string[];
  timeoutMs: number;
}

export type E2bErrorCode =
  | ErrorCode.TOOL_EXCEPTION
  | ErrorCode.EXECUTION_TIMEOUT
  | ErrorCode.OUTPUT_LIMIT_EXCEEDED
  | ErrorCode.SANDBOX_FAILURE
  | ErrorCode.SANDBOX_LOST
  | ErrorCode.DEPENDENCY_INSTALL_FAILED;

/** How a call ended (the tool may have started); provider failures before it started are thrown (ToolplaneError). */
export interface E2bOutcome {
  status: 'success' | 'error';
  value?: unknown;
  error?: { code: E2bErrorCode; type: string; message: string };
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  /** The sandbox had served calls before this one. */
  reused: boolean;
  sandboxId?: string;
}

const TS_TYPES = new Set(['typescript', 'javascript']);
/** Attempts of a call whose sandbox turned out gone or taken before its tool started. */
const ATTEMPTS = 3;

/**
 * runner-e2b's driver: composes the slot pool (SandboxPool), the environment store (E2bSandboxes)
 * and the isolation policy (the launcher): a call gets a leased sandbox of its environment, its job
 * uploaded, one launcher command, and the launcher's report read back. Knows no NATS.
 */
export class E2bDriver {
  private readonly log = new Logger(E2bDriver.name);
  private readonly layout: SandboxLayout;

  constructor(
    private readonly pool: SandboxPool,
    private readonly sandboxes: E2bSandboxes,
    private readonly c: E2bRunnerConfig,
  ) {
    this.layout = sandboxes.layout;
  }

  environment(req: EnvironmentRequest): Environment {
    const k = environmentKeys(this.c.E2B_DEPLOYMENT, this.c.E2B_PYTHON, req);
    return this.pool.environment(k.key, k.family, k.requirementsHash, req);
  }

  /** Waits for the environment (ENVIRONMENT_BUILDING past `waitMs`); a failed install is the call's outcome. */
  async prepare(env: Environment, waitMs: number, signal?: AbortSignal): Promise<E2bOutcome | undefined> {
    try {
      await this.pool.ensureReady(env, waitMs, signal);
      return undefined;
    } catch (e) {
      return dependencyFailure(e) ?? rethrow(e, env, signal);
    }
  }

  /** Runs the call in a sandbox of its environment. Provider failures before the tool started are thrown. */
  async run(env: Environment, call: E2bCall, signal: AbortSignal): Promise<E2bOutcome> {
    const started = performance.now();
    const node = TS_TYPES.has(call.sourceType);
    if (call.sourceType !== 'python' && !node) throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `runner-e2b runs python, typescript and javascript tools, not ${call.sourceType}`, { provider: 'e2b' });
    for (let attempt = 1; ; attempt++) {
      let slot: Slot;
      try {
        slot = await step('acquire sandbox', { 'toolplane.tool.id': call.toolId, 'toolplane.e2b.environment': env.key }, async (span) => {
          const s = await this.pool.lease(env, signal);
          span.setAttributes({ 'toolplane.sandbox.id': s.id, 'toolplane.sandbox.reused': s.served > 1 });
          return s;
        });
      } catch (e) {
        return dependencyFailure(e) ?? rethrow(e, env, signal);
      }
      if (node && !slot.node) {
        this.pool.release(slot, true);
        throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `the E2B template ${env.template} has no Node (${this.c.E2B_NODE}): TypeScript/JavaScript tools cannot run on it`, { provider: 'e2b', source_type: call.sourceType });
      }
      const r = await this.runOn(slot, env, call, signal, started);
      if (r === 'retry' && attempt < ATTEMPTS) continue;
      if (r === 'retry') throw new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'no E2B sandbox could take the call', { provider: 'e2b' });
      return r;
    }
  }

  private async runOn(slot: Slot, env: Environment, call: E2bCall, signal: AbortSignal, started: number): Promise<E2bOutcome | 'retry'> {
    const user = this.c.E2B_COMMAND_USER;
    const nonce = randomBytes(16).toString('hex');
    const id = `${call.runId.replace(/[^A-Za-z0-9-]/g, '').slice(0, 36)}-${randomBytes(4).toString('hex')}`;
    const dir = this.layout.callDir(id);
    const workDir = this.layout.workDir(id);
    const reused = slot.served > 1;
    const attrs = { 'toolplane.tool.id': call.toolId, 'toolplane.sandbox.id': slot.id };
    const masker = new SecretMasker(call.maskValues);
    const envs = toolEnv(call.env, workDir);
    const node = TS_TYPES.has(call.sourceType);
    const envDir = env.requirementsHash ? this.layout.envDir(env.requirementsHash) : null;
    const script = node ? prepareScript(call.sourceCode, call.functionName) : undefined;
    const job = node
      ? { nonce, source: script!.code, function: call.functionName, params: script!.params, args: call.args, agent_id: call.agentId ?? null, module_dir: envDir ?? this.layout.state }
      : { nonce, source: call.sourceCode, function: call.functionName, args: call.args, agent_id: call.agentId ?? null };
    // Python tools run in a fork of the launcher: the launcher runs on the environment's interpreter.
    const python = !node && envDir && env.pip.length ? `${envDir}/bin/python3` : this.c.E2B_PYTHON;
    const spec = callJson(this.c, this.layout, {
      nonce,
      runtime: node ? 'node' : 'python',
      python,
      workDir,
      timeoutMs: call.timeoutMs,
      maxOutputBytes: this.c.E2B_MAX_OUTPUT_BYTES,
      envKeys: Object.keys(envs),
      lanes: env.lanes,
      proof: slot.proof,
    });

    // 1. The job (source and arguments as data; never the env); E2B's timeout of the sandbox outlasts the call.
    try {
      await this.pool.keepAliveFor(slot, call.timeoutMs + this.c.E2B_COMMAND_GRACE_MS);
      await step('upload job', attrs, () => slot.sandbox.files.write([{ path: `${dir}/job.json`, data: JSON.stringify(job) }, { path: `${dir}/call.json`, data: spec }], { user }));
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      if (isSandboxGone(e)) return 'retry';
      throw providerError(e, env.account, 'uploading the call');
    }

    // 2. One launcher command: the tool runs, the launcher proves the sandbox clean.
    const stdout = new OutputCapture(this.c.E2B_STDOUT_LIMIT_BYTES + masker.lookaheadBytes);
    const stderr = new OutputCapture(this.c.E2B_STDERR_LIMIT_BYTES + masker.lookaheadBytes);
    let handle: CommandHandle;
    try {
      handle = await slot.sandbox.commands.run(this.layout.command(python, 'run', `${dir}/call.json`), {
        background: true,
        user,
        envs,
        timeoutMs: call.timeoutMs + this.c.E2B_COMMAND_GRACE_MS,
        onStdout: (d) => stdout.push(Buffer.from(d, 'utf8')),
        onStderr: (d) => stderr.push(Buffer.from(d, 'utf8')),
      });
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      if (isSandboxGone(e)) return 'retry';
      throw providerError(e, env.account, 'starting the call');
    }
    const streams = () => {
      const out = stdout.maskedText(this.c.E2B_STDOUT_LIMIT_BYTES, masker);
      const err = stderr.maskedText(this.c.E2B_STDERR_LIMIT_BYTES, masker);
      return { stdout: out.text, stderr: err.text, stdoutTruncated: out.truncated, stderrTruncated: err.truncated };
    };
    const done = (o: Omit<E2bOutcome, 'durationMs' | 'reused' | 'stdout' | 'stderr' | 'stdoutTruncated' | 'stderrTruncated' | 'sandboxId'>): E2bOutcome => ({
      ...o,
      ...(o.value !== undefined ? { value: masker.value(o.value) } : {}),
      ...(o.error ? { error: { ...o.error, message: masker.text(o.error.message), type: masker.text(o.error.type) } } : {}),
      ...streams(),
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      reused,
      sandboxId: slot.id,
    });

    const ended = await step('run command', { ...attrs, 'toolplane.timeout_ms': call.timeoutMs }, async (span) => {
      const onAbort = () => void handle.kill().catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await handle.wait();
        return { exit: 0 };
      } catch (e) {
        const code = exitCodeOf(e);
        span.setAttribute('toolplane.e2b.exit_code', code ?? -1);
        return code !== undefined ? { exit: code } : { lost: e };
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    });
    if (signal.aborted) {
      this.pool.release(slot, false, 'aborted');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'Abandoned', message: 'the call was given up (its caller stopped waiting or gave it up): it was stopped and its sandbox killed' } });
    }
    if ('lost' in ended) {
      // The stream broke: the sandbox died, or nothing can be proven about it any more.
      const gone = isSandboxGone(ended.lost);
      this.log.warn(`sandbox ${slot.id} was lost during a call of tool ${call.toolId}: ${scrub((ended.lost as Error)?.message ?? String(ended.lost), env.account).slice(0, 300)}`);
      this.pool.release(slot, false, 'lost');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_LOST, type: 'SandboxLost', message: gone ? 'the E2B sandbox died during the call: it was replaced' : 'the connection to the E2B sandbox was lost during the call: it was replaced' } });
    }
    if (ended.exit === EXIT_BUSY) {
      // Another runner replica holds every lane of this sandbox: nothing ran; leave it to that replica.
      this.pool.forget(slot);
      return 'retry';
    }
    if (ended.exit !== 0) {
      this.pool.release(slot, false, 'launcher failed');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'SandboxFailure', message: `the launcher in the E2B sandbox exited with ${ended.exit}` } });
    }

    // 3. The report: written by the launcher after every process of the call was dead.
    let text: string;
    try {
      text = await step('read result', attrs, () => slot.sandbox.files.read(`${dir}/report.json`, { user }));
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_LOST, type: 'SandboxLost', message: `the result could not be read from the E2B sandbox (${isSandboxGone(e) ? 'it died' : scrub((e as Error).message, env.account).slice(0, 200)}): it was replaced` } });
    }
    const report = parseReport(RunReport, text, nonce);
    if (!report) {
      this.pool.release(slot, false, 'no report');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'ProtocolError', message: 'the launcher did not report on the call' } });
    }
    const exclusive = env.lanes === 1;
    const clean = report.dirty.length === 0 && (!exclusive || report.proved_at !== null);
    if (!clean) this.log.warn(`sandbox ${slot.id} is not provably clean after a call of tool ${call.toolId} (${report.dirty.join('; ').slice(0, 500)}): killing it`);
    if (clean && exclusive) slot.proof = { state: slot.proof.state, provedAt: report.proved_at! };
    this.pool.release(slot, clean, 'dirty');
    return done(outcomeOf(report, nonce, call, this.c.E2B_MAX_OUTPUT_BYTES));
  }
}

/** A failed requirements install: the call's outcome (DEPENDENCY_INSTALL_FAILED, naming the package). */
function dependencyFailure(e: unknown): E2bOutcome | undefined {
  return e instanceof DependencyInstallError ? failed(ErrorCode.DEPENDENCY_INSTALL_FAILED, 'DependencyInstallFailed', e.message, 0) : undefined;
}

function rethrow(e: unknown, env: Environment, signal?: AbortSignal): never {
  if (e instanceof ToolplaneError) throw e;
  if (signal?.aborted) throw signal.reason instanceof ToolplaneError ? signal.reason : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, 'the call was given up while it waited for an E2B sandbox');
  throw providerError(e, env.account, 'getting a sandbox');
}

function failed(code: E2bErrorCode, type: string, message: string, durationMs: number): E2bOutcome {
  return { status: 'error', error: { code, type, message }, stdout: '', stderr: '', stdoutTruncated: false, stderrTruncated: false, durationMs, reused: false };
}

/** The call's result from the launcher's report (shared with runner-modal: libs/sandbox). */
export { outcomeOf } from '@toolplane/sandbox';
