import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { SecretMasker } from '@toolplane/platform';
import { callJson, EXIT_BUSY, outcomeOf, OutputCapture, parseReport, prepareScript, RunReport, toolEnv, type RemoteOutcome } from '@toolplane/sandbox';
import type { ContainerProcess } from 'modal';
import { randomBytes } from 'node:crypto';
import type { ModalRunnerConfig } from '../runner-modal.config';
import { environmentKeys, step, type EnvironmentRequest, type ModalSandboxes } from './environments';
import { isDeadline, isSandboxGone, providerError, scrub } from './modal.api';
import type { PoolEnvironment, SandboxPool, Slot } from './sandbox-pool';

/** One call as runner-modal runs it. */
export interface ModalCall {
  runId: string;
  toolId: string;
  functionName: string;
  sourceCode: string;
  sourceType: string;
  args: Record<string, unknown>;
  agentId?: string;
  /** The call's final env (credentials resolved it): reaches the tool through the exec's env only. */
  env: Record<string, string>;
  maskValues: string[];
  timeoutMs: number;
}

export type ModalErrorCode = NonNullable<RemoteOutcome['error']>['code'] | ErrorCode.SANDBOX_LOST | ErrorCode.DEPENDENCY_INSTALL_FAILED;

export interface ModalOutcome {
  status: 'success' | 'error';
  value?: unknown;
  error?: { code: ModalErrorCode; type: string; message: string };
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  reused: boolean;
  sandboxId?: string;
}

/** Source types that run on Node in the sandbox (node_harness.cjs through the launcher). */
const NODE_TYPES = new Set(['typescript', 'javascript']);

/** Attempts of a call whose sandbox turned out gone before its tool started. */
const ATTEMPTS = 3;

/** Modal takes exec timeouts in whole seconds: round up. */
export function wholeSecondsMs(ms: number): number {
  return Math.ceil(ms / 1000) * 1000;
}

/**
 * runner-modal's driver: composes the slot pool (SandboxPool), the environment store
 * (ModalSandboxes: images, sandboxes, proofs) and the isolation policy (the shared launcher): a call
 * gets a leased warm sandbox, its job written through the filesystem API, one launcher exec with
 * the env on the exec, and the launcher's report read back through the filesystem API (the result
 * channel the tool cannot forge: a pipe only the launcher holds, then a file written after every
 * process of the call is dead). Knows no NATS.
 */
export class ModalDriver {
  private readonly log = new Logger(ModalDriver.name);

  constructor(
    private readonly pool: SandboxPool,
    private readonly sandboxes: ModalSandboxes,
    private readonly c: ModalRunnerConfig,
  ) {}

  environment(req: EnvironmentRequest): PoolEnvironment {
    return this.pool.environment(req, environmentKeys(this.c, req));
  }

  async run(env: PoolEnvironment, call: ModalCall, waitMs: number, signal: AbortSignal): Promise<ModalOutcome> {
    const started = performance.now();
    const node = NODE_TYPES.has(call.sourceType);
    if (call.sourceType !== 'python' && !node) throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `runner-modal runs python, typescript and javascript tools, not ${call.sourceType}`, { provider: 'modal' });
    for (let attempt = 1; ; attempt++) {
      const slot = await step('acquire sandbox', { 'toolplane.tool.id': call.toolId }, async (span) => {
        try {
          const s = await this.pool.lease(env, waitMs, signal);
          span.setAttributes({ 'toolplane.sandbox.id': s.id, 'toolplane.sandbox.reused': s.served > 1 });
          return s;
        } catch (e) {
          throw providerError(e, env.req.account, 'getting a sandbox');
        }
      });
      if (node && !slot.node) {
        this.pool.release(slot, true);
        throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `the Modal image (${this.c.MODAL_IMAGE} with MODAL_NODE_INSTALL) has no Node at ${this.c.MODAL_NODE}: TypeScript/JavaScript tools cannot run on it`, { provider: 'modal', source_type: call.sourceType });
      }
      const r = await this.runOn(slot, call, signal, started);
      if (r !== 'retry') return r;
      if (attempt >= ATTEMPTS) throw new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'no Modal sandbox could take the call', { provider: 'modal' });
    }
  }

  private async runOn(slot: Slot, call: ModalCall, signal: AbortSignal, started: number): Promise<ModalOutcome | 'retry'> {
    const layout = this.sandboxes.layout;
    const account = slot.env.req.account;
    const sandbox = slot.sandbox;
    const nonce = randomBytes(16).toString('hex');
    const id = `${call.runId.replace(/[^A-Za-z0-9-]/g, '').slice(0, 36)}-${randomBytes(4).toString('hex')}`;
    const dir = layout.callDir(id);
    const workDir = layout.workDir(id);
    const reused = slot.served > 1;
    const attrs = { 'toolplane.tool.id': call.toolId, 'toolplane.sandbox.id': slot.id };
    const masker = new SecretMasker(call.maskValues);
    const envs = toolEnv(call.env, workDir);
    const python = this.sandboxes.python(slot.env.req);
    const node = NODE_TYPES.has(call.sourceType);
    const lanes = slot.env.req.lanes;
    let job: Record<string, unknown>;
    if (node) {
      let script: ReturnType<typeof prepareScript>;
      try {
        script = prepareScript(call.sourceCode, call.functionName);
      } catch (e) {
        this.pool.release(slot, true);
        throw e;
      }
      job = { nonce, source: script.code, function: call.functionName, params: script.params, args: call.args, agent_id: call.agentId ?? null, module_dir: layout.state };
    } else {
      job = { nonce, source: call.sourceCode, function: call.functionName, args: call.args, agent_id: call.agentId ?? null };
    }
    const spec = callJson(this.sandboxes.settings, layout, { nonce, runtime: node ? 'node' : 'python', python, workDir, timeoutMs: call.timeoutMs, maxOutputBytes: this.c.MODAL_MAX_OUTPUT_BYTES, envKeys: Object.keys(envs), lanes, proof: slot.proof });

    // 1. The job (source and arguments as data; never the env).
    try {
      await step('upload job', attrs, async () => {
        await sandbox.filesystem.writeText(JSON.stringify(job), `${dir}/job.json`);
        await sandbox.filesystem.writeText(spec, `${dir}/call.json`);
      });
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      if (isSandboxGone(e)) return 'retry';
      throw providerError(e, account, 'uploading the call');
    }

    const stdout = new OutputCapture(this.c.MODAL_STDOUT_LIMIT_BYTES + masker.lookaheadBytes);
    const stderr = new OutputCapture(this.c.MODAL_STDERR_LIMIT_BYTES + masker.lookaheadBytes);
    const done = (o: RemoteOutcome | Pick<ModalOutcome, 'status' | 'error'>): ModalOutcome => {
      const out = stdout.maskedText(this.c.MODAL_STDOUT_LIMIT_BYTES, masker);
      const err = stderr.maskedText(this.c.MODAL_STDERR_LIMIT_BYTES, masker);
      return {
        status: o.status,
        ...('value' in o && o.value !== undefined ? { value: masker.value(o.value) } : {}),
        ...(o.error ? { error: { ...o.error, message: masker.text(o.error.message), type: masker.text(o.error.type) } } : {}),
        stdout: out.text,
        stderr: err.text,
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        reused,
        sandboxId: slot.id,
      };
    };

    // 2. One launcher exec: the tool runs, the launcher proves the sandbox clean.
    let proc: ContainerProcess<Uint8Array>;
    try {
      proc = await sandbox.exec(['/bin/sh', '-c', layout.command(python, 'run', `${dir}/call.json`)], { mode: 'binary', env: envs, timeoutMs: wholeSecondsMs(call.timeoutMs + this.c.MODAL_COMMAND_GRACE_MS) });
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      if (isSandboxGone(e)) return 'retry';
      throw providerError(e, account, 'starting the call');
    }
    const ended = await step('run command', { ...attrs, 'toolplane.timeout_ms': call.timeoutMs }, async (span) => {
      let onAbort: () => void = () => undefined;
      const aborted = new Promise<{ aborted: true }>((resolve) => {
        onAbort = () => resolve({ aborted: true });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        const finished = Promise.all([drain(proc.stdout, (b) => stdout.push(b)), drain(proc.stderr, (b) => stderr.push(b)), proc.wait()]).then(([, , exit]) => ({ exit }));
        const r = await Promise.race([finished, aborted]);
        if ('exit' in r) span.setAttribute('toolplane.modal.exit_code', r.exit);
        return r;
      } catch (e) {
        return { lost: e };
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    });
    if ('aborted' in ended) {
      this.pool.release(slot, false, 'aborted');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'Abandoned', message: 'the call was given up (its caller stopped waiting or gave it up): its sandbox was terminated' } });
    }
    if ('lost' in ended) {
      this.pool.release(slot, false, 'lost');
      if (isDeadline(ended.lost)) return done({ status: 'error', error: { code: ErrorCode.EXECUTION_TIMEOUT, type: 'TimeoutError', message: `Function ${call.functionName} timed out after ${call.timeoutMs} ms (the Modal exec deadline passed): its sandbox was terminated` } });
      this.log.warn(`sandbox ${slot.id} was lost during a call of tool ${call.toolId}: ${scrub((ended.lost as Error)?.message ?? String(ended.lost), account).slice(0, 300)}`);
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_LOST, type: 'SandboxLost', message: isSandboxGone(ended.lost) ? 'the Modal sandbox ended during the call: it was replaced' : 'the connection to the Modal sandbox was lost during the call: it was replaced' } });
    }
    if (ended.exit === EXIT_BUSY) {
      // Another runner replica holds every lane of this sandbox: nothing ran; leave it to that replica.
      this.pool.forget(slot);
      return 'retry';
    }
    if (ended.exit !== 0) {
      // Killed with its sandbox (terminated, timed out on Modal's side): the sandbox is gone, not broken.
      const gone = await sandbox.poll().then((code) => code !== null, () => true);
      this.pool.release(slot, false, gone ? 'lost' : 'launcher failed');
      if (gone) return done({ status: 'error', error: { code: ErrorCode.SANDBOX_LOST, type: 'SandboxLost', message: 'the Modal sandbox ended during the call: it was replaced' } });
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'SandboxFailure', message: `the launcher in the Modal sandbox exited with ${ended.exit}` } });
    }

    // 3. The report: written by the launcher after every process of the call was dead.
    let text: string;
    try {
      text = await step('read result', attrs, () => sandbox.filesystem.readText(`${dir}/report.json`));
    } catch (e) {
      this.pool.release(slot, false, 'lost');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_LOST, type: 'SandboxLost', message: `the result could not be read from the Modal sandbox (${isSandboxGone(e) ? 'it ended' : scrub((e as Error).message, account).slice(0, 200)}): it was replaced` } });
    }
    const report = parseReport(RunReport, text, nonce);
    if (!report) {
      this.pool.release(slot, false, 'no report');
      return done({ status: 'error', error: { code: ErrorCode.SANDBOX_FAILURE, type: 'ProtocolError', message: 'the launcher did not report on the call' } });
    }
    // Shared sandboxes (calls_per_sandbox > 1) are proved once drained (the pool's prove step); an exclusive one by this call's launcher.
    const exclusive = lanes === 1;
    const clean = report.dirty.length === 0 && (!exclusive || report.proved_at !== null);
    if (!clean) this.log.warn(`sandbox ${slot.id} is not provably clean after a call of tool ${call.toolId} (${report.dirty.join('; ').slice(0, 500)}): terminating it`);
    else if (exclusive) slot.proof = { state: slot.proof.state, provedAt: report.proved_at! };
    this.pool.release(slot, clean, 'dirty');
    return done(outcomeOf(report, nonce, call, this.c.MODAL_MAX_OUTPUT_BYTES));
  }
}

/** Reads a process stream to its end. */
async function drain(stream: ReadableStream<Uint8Array>, push: (b: Buffer) => void): Promise<void> {
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    push(Buffer.from(value));
  }
}
