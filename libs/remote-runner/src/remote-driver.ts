import { Logger } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { inSpan } from '@toolplane/observability';
import { SecretMasker } from '@toolplane/platform';
import {
  callJson,
  EXIT_BUSY,
  outcomeOf,
  OutputCapture,
  parseReport,
  prepareScript,
  RunReport,
  toolEnv,
  type RemoteOutcome,
} from '@toolplane/sandbox';
import { randomBytes } from 'node:crypto';
import { isDependencyFailure, type RemoteEnvironment, type RemotePool, type RemoteSandbox } from './remote-pool';
import type { RemoteEnvironmentRequest, RemoteProvider } from './remote-provider';

/** One call as a remote runner runs it. */
export interface RemoteCall {
  runId: string;
  toolId: string;
  functionName: string;
  sourceCode: string;
  sourceType: string;
  args: Record<string, unknown>;
  agentId?: string;
  /** The call's final env (credentials resolved it): reaches the tool through the command's env only. */
  env: Record<string, string>;
  maskValues: string[];
  timeoutMs: number;
}

export type RemoteErrorCode =
  | NonNullable<RemoteOutcome['error']>['code']
  | ErrorCode.SANDBOX_LOST
  | ErrorCode.DEPENDENCY_INSTALL_FAILED;

/** How a call ended (the tool may have started); provider failures before it started are thrown (ToolplaneError). */
export interface RemoteCallOutcome {
  status: 'success' | 'error';
  value?: unknown;
  error?: { code: RemoteErrorCode; type: string; message: string };
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  /** The sandbox had served calls before this one. */
  reused: boolean;
  sandboxId?: string;
}

/** The output limits of a runner's calls (its config). */
export interface RemoteCallLimits {
  stdoutLimitBytes: number;
  stderrLimitBytes: number;
  /** Output (stdout + stderr) past which the launcher stops the tool. */
  maxOutputBytes: number;
  /** Time a command gets past its tool's timeout before it is given up and its sandbox killed. */
  commandGraceMs: number;
}

/** Source types that run on Node in the sandbox (node_harness.cjs through the launcher). */
const NODE_TYPES = new Set(['typescript', 'javascript']);
/** Attempts of a call whose sandbox turned out gone or taken before its tool started. */
const ATTEMPTS = 3;

/** One span per step of a remote runner; the span carries ids and sizes, never a secret. */
export function remoteStep<T>(
  provider: string,
  name: string,
  attributes: Record<string, string | number | boolean>,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return inSpan(`runner-${provider}`, name, fn, attributes);
}

/** A failed requirements install as the call's outcome (DEPENDENCY_INSTALL_FAILED, naming the package). */
export function dependencyOutcome(e: Error): RemoteCallOutcome {
  return {
    status: 'error',
    error: { code: ErrorCode.DEPENDENCY_INSTALL_FAILED, type: 'DependencyInstallFailed', message: e.message },
    stdout: '',
    stderr: '',
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 0,
    reused: false,
  };
}

/**
 * The call protocol of a remote runner: a call gets a leased sandbox of its environment, its job
 * uploaded (source and arguments as data, never the env), one launcher command with the env on
 * the command, and the launcher's report read back (the result channel the tool cannot forge: a
 * pipe only the launcher holds, then a file written after every process of the call is dead).
 * The sandbox goes back to the pool only when the report proves it clean. Knows no NATS.
 */
export class RemoteDriver<R extends RemoteEnvironmentRequest, B> {
  private readonly log = new Logger(RemoteDriver.name);

  constructor(
    private readonly provider: RemoteProvider<R, B>,
    private readonly pool: RemotePool<R, B>,
    private readonly limits: RemoteCallLimits,
  ) {}

  /** Runs the call in a sandbox of its environment (waiting at most `waitMs` for one). Provider failures before the tool started are thrown. */
  async run(
    env: RemoteEnvironment<R, B>,
    call: RemoteCall,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<RemoteCallOutcome> {
    const p = this.provider;
    const started = performance.now();
    const node = NODE_TYPES.has(call.sourceType);
    if (call.sourceType !== 'python' && !node)
      throw new ToolplaneError(
        ErrorCode.UNSUPPORTED_TOOL,
        `runner-${p.name} runs python, typescript and javascript tools, not ${call.sourceType}`,
        { provider: p.name },
      );
    for (let attempt = 1; ; attempt++) {
      let sandbox: RemoteSandbox<B>;
      try {
        sandbox = await remoteStep(
          p.name,
          'acquire sandbox',
          { 'toolplane.tool.id': call.toolId, [`toolplane.${p.name}.environment`]: env.key },
          async (span) => {
            const s = await this.pool.lease(env, waitMs, signal);
            span.setAttributes({ 'toolplane.sandbox.id': s.id, 'toolplane.sandbox.reused': s.served > 1 });
            return s;
          },
        );
      } catch (e) {
        if (isDependencyFailure(e)) return dependencyOutcome(e as Error);
        if (e instanceof ToolplaneError) throw e;
        throw p.providerError(e, env, 'getting a sandbox');
      }
      if (node && !sandbox.node) {
        this.pool.release(sandbox, true);
        throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, p.noNode(env), {
          provider: p.name,
          source_type: call.sourceType,
        });
      }
      const r = await this.runOn(sandbox, call, signal, started);
      if (r !== 'retry') return r;
      if (attempt >= ATTEMPTS)
        throw new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `no ${p.label} sandbox could take the call`, {
          provider: p.name,
        });
    }
  }

  private async runOn(
    sandbox: RemoteSandbox<B>,
    call: RemoteCall,
    signal: AbortSignal,
    started: number,
  ): Promise<RemoteCallOutcome | 'retry'> {
    const p = this.provider;
    const env = sandbox.env as RemoteEnvironment<R, B>;
    const { layout, settings } = p.launcher;
    const box = sandbox.box;
    const nonce = randomBytes(16).toString('hex');
    const id = `${call.runId.replace(/[^A-Za-z0-9-]/g, '').slice(0, 36)}-${randomBytes(4).toString('hex')}`;
    const dir = layout.callDir(id);
    const workDir = layout.workDir(id);
    const reused = sandbox.served > 1;
    const attrs = { 'toolplane.tool.id': call.toolId, 'toolplane.sandbox.id': sandbox.id };
    const masker = new SecretMasker(call.maskValues);
    const envs = toolEnv(call.env, workDir);
    const node = NODE_TYPES.has(call.sourceType);
    const python = p.python(env);
    let job: Record<string, unknown>;
    if (node) {
      let script: ReturnType<typeof prepareScript>;
      try {
        script = prepareScript(call.sourceCode, call.functionName);
      } catch (e) {
        this.pool.release(sandbox, true);
        throw e;
      }
      job = {
        nonce,
        source: script.code,
        function: call.functionName,
        params: script.params,
        args: call.args,
        agent_id: call.agentId ?? null,
        module_dir: p.moduleDir(env),
      };
    } else {
      job = {
        nonce,
        source: call.sourceCode,
        function: call.functionName,
        args: call.args,
        agent_id: call.agentId ?? null,
      };
    }
    const spec = callJson(settings, layout, {
      nonce,
      runtime: node ? 'node' : 'python',
      python,
      workDir,
      timeoutMs: call.timeoutMs,
      maxOutputBytes: this.limits.maxOutputBytes,
      envKeys: Object.keys(envs),
      lanes: env.lanes,
      proof: sandbox.proof,
    });

    // 1. The job (source and arguments as data; never the env); the provider's timeout of the sandbox outlasts the call.
    try {
      await this.pool.keepAliveFor(sandbox, call.timeoutMs + this.limits.commandGraceMs);
      await remoteStep(p.name, 'upload job', attrs, () =>
        p.write(env, box, [
          { path: `${dir}/job.json`, data: JSON.stringify(job) },
          { path: `${dir}/call.json`, data: spec },
        ]),
      );
    } catch (e) {
      this.pool.release(sandbox, false, 'lost');
      if (p.isGone(e)) return 'retry';
      throw p.providerError(e, env, 'uploading the call');
    }

    const stdout = new OutputCapture(this.limits.stdoutLimitBytes + masker.lookaheadBytes);
    const stderr = new OutputCapture(this.limits.stderrLimitBytes + masker.lookaheadBytes);
    const done = (o: RemoteOutcome | Pick<RemoteCallOutcome, 'status' | 'error'>): RemoteCallOutcome => {
      const out = stdout.maskedText(this.limits.stdoutLimitBytes, masker);
      const err = stderr.maskedText(this.limits.stderrLimitBytes, masker);
      return {
        status: o.status,
        ...('value' in o && o.value !== undefined ? { value: masker.value(o.value) } : {}),
        ...(o.error
          ? { error: { ...o.error, message: masker.text(o.error.message), type: masker.text(o.error.type) } }
          : {}),
        stdout: out.text,
        stderr: err.text,
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        reused,
        sandboxId: sandbox.id,
      };
    };

    // 2. One launcher command: the tool runs, the launcher proves the sandbox clean.
    let command: Awaited<ReturnType<typeof p.start>>;
    try {
      command = await p.start(env, box, layout.command(python, 'run', `${dir}/call.json`), {
        envs,
        timeoutMs: call.timeoutMs + this.limits.commandGraceMs,
        stdout: (b) => stdout.push(b),
        stderr: (b) => stderr.push(b),
      });
    } catch (e) {
      this.pool.release(sandbox, false, 'lost');
      if (p.isGone(e)) return 'retry';
      throw p.providerError(e, env, 'starting the call');
    }
    const ended = await remoteStep(
      p.name,
      'run command',
      { ...attrs, 'toolplane.timeout_ms': call.timeoutMs },
      async (span) => {
        let onAbort: () => void = () => undefined;
        const aborted = new Promise<{ aborted: true }>((resolve) => {
          onAbort = () => resolve({ aborted: true });
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
        try {
          const r = await Promise.race([command.wait(), aborted]);
          if ('aborted' in r) command.stop();
          if ('exit' in r) span.setAttribute(`toolplane.${p.name}.exit_code`, r.exit);
          return r;
        } finally {
          signal.removeEventListener('abort', onAbort);
        }
      },
    );
    if ('aborted' in ended) {
      this.pool.release(sandbox, false, 'aborted');
      return done({
        status: 'error',
        error: {
          code: ErrorCode.SANDBOX_FAILURE,
          type: 'Abandoned',
          message:
            'the call was given up (its caller stopped waiting or gave it up): it was stopped and its sandbox killed',
        },
      });
    }
    if ('lost' in ended) {
      // The stream broke: the sandbox died, or nothing can be proven about it any more.
      this.pool.release(sandbox, false, 'lost');
      if (p.isDeadline?.(ended.lost))
        return done({
          status: 'error',
          error: {
            code: ErrorCode.EXECUTION_TIMEOUT,
            type: 'TimeoutError',
            message: `Function ${call.functionName} timed out after ${call.timeoutMs} ms (the ${p.label} command deadline passed): its sandbox was killed`,
          },
        });
      this.log.warn(
        `sandbox ${sandbox.id} was lost during a call of tool ${call.toolId}: ${p.scrub((ended.lost as Error)?.message ?? String(ended.lost), env).slice(0, 300)}`,
      );
      return done({
        status: 'error',
        error: {
          code: ErrorCode.SANDBOX_LOST,
          type: 'SandboxLost',
          message: p.isGone(ended.lost)
            ? `the ${p.label} sandbox ended during the call: it was replaced`
            : `the connection to the ${p.label} sandbox was lost during the call: it was replaced`,
        },
      });
    }
    if (ended.exit === EXIT_BUSY) {
      // Another runner replica holds every lane of this sandbox: nothing ran; leave it to that replica.
      this.pool.forget(sandbox);
      return 'retry';
    }
    if (ended.exit !== 0) {
      // Killed with its sandbox (killed, timed out on the provider's side): the sandbox is gone, not broken.
      const gone = p.ended ? await p.ended(box).catch(() => true) : false;
      this.pool.release(sandbox, false, gone ? 'lost' : 'launcher failed');
      if (gone)
        return done({
          status: 'error',
          error: {
            code: ErrorCode.SANDBOX_LOST,
            type: 'SandboxLost',
            message: `the ${p.label} sandbox ended during the call: it was replaced`,
          },
        });
      return done({
        status: 'error',
        error: {
          code: ErrorCode.SANDBOX_FAILURE,
          type: 'SandboxFailure',
          message: `the launcher in the ${p.label} sandbox exited with ${ended.exit}`,
        },
      });
    }

    // 3. The report: written by the launcher after every process of the call was dead.
    let text: string;
    try {
      text = await remoteStep(p.name, 'read result', attrs, () => p.read(env, box, `${dir}/report.json`));
    } catch (e) {
      this.pool.release(sandbox, false, 'lost');
      return done({
        status: 'error',
        error: {
          code: ErrorCode.SANDBOX_LOST,
          type: 'SandboxLost',
          message: `the result could not be read from the ${p.label} sandbox (${p.isGone(e) ? 'it ended' : p.scrub((e as Error).message, env).slice(0, 200)}): it was replaced`,
        },
      });
    }
    const report = parseReport(RunReport, text, nonce);
    if (!report) {
      this.pool.release(sandbox, false, 'no report');
      return done({
        status: 'error',
        error: {
          code: ErrorCode.SANDBOX_FAILURE,
          type: 'ProtocolError',
          message: 'the launcher did not report on the call',
        },
      });
    }
    // Shared sandboxes (calls_per_sandbox > 1) are proved once drained (the pool's prove step); an exclusive one by this call's launcher.
    const exclusive = env.lanes === 1;
    const clean = report.dirty.length === 0 && (!exclusive || report.proved_at !== null);
    if (!clean)
      this.log.warn(
        `sandbox ${sandbox.id} is not provably clean after a call of tool ${call.toolId} (${report.dirty.join('; ').slice(0, 500)}): killing it`,
      );
    else if (exclusive) sandbox.proof = { state: sandbox.proof.state, provedAt: report.proved_at! };
    this.pool.release(sandbox, clean, 'dirty');
    return done(outcomeOf(report, nonce, call, this.limits.maxOutputBytes));
  }
}
