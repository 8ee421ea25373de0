import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ErrorCode, LocalRunAbandoned, type LocalRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { currentRequestSignal, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, FairQueue } from '@toolplane/platform';
import {
  failed,
  formatToolError,
  type IsolationLimits,
  type SandboxDriver,
  type SandboxErrorKind,
  type SandboxRunOutcome,
  type SandboxRunSpec,
} from '@toolplane/sandbox';
import { randomUUID } from 'node:crypto';
import { SandboxEnvironmentsService, environmentSpecOf } from '../environments/environments.service';
import type { RunnerConfig } from '../runner-local.config';
import { RunnerMetrics } from '../metrics/runner.metrics';

export const SANDBOX_DRIVER = Symbol('SANDBOX_DRIVER');

const CODE_BY_KIND: Record<SandboxErrorKind, ErrorCode> = {
  exception: ErrorCode.TOOL_EXCEPTION,
  timeout: ErrorCode.EXECUTION_TIMEOUT,
  output_limit: ErrorCode.OUTPUT_LIMIT_EXCEEDED,
  crashed: ErrorCode.SANDBOX_FAILURE,
  protocol: ErrorCode.SANDBOX_FAILURE,
  spawn_failed: ErrorCode.SANDBOX_FAILURE,
  dependency_failed: ErrorCode.DEPENDENCY_INSTALL_FAILED,
};

/** First stderr entry of every result in the unsafe mode. */
export const UNSAFE_NOTE =
  '[toolplane] WARNING: this runner has RUNNER_ISOLATION=unsafe: the tool ran without sandbox isolation.\n';
export const NETWORK_REFUSED_NOTE =
  '[toolplane] the sandbox config asks for network, but this runner has RUNNER_ALLOW_NETWORK=false: the tool ran without network.\n';
const MB = 1024 * 1024;

const tracer = trace.getTracer('runner-local');
type RunRequest = RequestOf<typeof LocalRunnerRun>;

@Injectable()
export class RunsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RunsService.name);
  private readonly queue: FairQueue;
  /** Calls in flight by run id: an abandoned one (LocalRunAbandoned) is stopped. */
  private readonly running = new Map<string, AbortController>();
  private abandonments?: { unsubscribe(): void };

  constructor(
    @Inject(SANDBOX_DRIVER) private readonly driver: SandboxDriver,
    @Inject(APP_CONFIG) private readonly config: RunnerConfig,
    private readonly metrics: RunnerMetrics,
    private readonly messaging: MessagingClient,
    private readonly environments: SandboxEnvironmentsService,
  ) {
    const limit = config.RUNNER_MAX_CONCURRENCY;
    this.queue = new FairQueue(limit, config.RUNNER_MAX_CONCURRENCY_PER_ORG ?? Math.max(1, Math.ceil((limit * 3) / 4)));
  }

  onModuleInit(): void {
    this.abandonments = this.messaging.subscribeSealed(LocalRunAbandoned, ({ run_ids }) => {
      for (const id of run_ids) {
        const call = this.running.get(id);
        if (!call) continue;
        this.log.warn(`run ${id} was abandoned by the executor: stopping it`);
        call.abort(new Error('abandoned by the executor'));
      }
    });
  }

  async run(req: RunRequest): Promise<ReplyOf<typeof LocalRunnerRun>> {
    const received = performance.now();
    this.metrics.inFlight++;
    const abort = new AbortController();
    if (req.run_id) this.running.set(req.run_id, abort);
    // This runner giving the request up (its own shutdown past the grace) stops the call too.
    const served = currentRequestSignal();
    const stop = () => abort.abort();
    served?.addEventListener('abort', stop, { once: true });
    try {
      const networkWanted = req.sandbox?.network ?? this.config.RUNNER_NETWORK;
      const networkRefused = networkWanted && !this.config.RUNNER_ALLOW_NETWORK;
      const spec = this.specOf(req, networkWanted && !networkRefused);
      // The environment (a virtualenv build, say) is made before the call takes its place in the
      // queue: a slow build never holds a place other orgs' calls wait for, and a call waits for
      // one only so long (then ENVIRONMENT_BUILDING, while the build goes on).
      const early = await this.environments.readyFor(spec, req.timeout_ms, abort.signal);
      const outcome: SandboxRunOutcome & { admittedAt?: number } =
        early ??
        (await this.admitted(req.org_id, abort.signal, () =>
          tracer.startActiveSpan('run sandbox', async (span) => {
            span.setAttributes({
              'toolplane.tool.id': req.tool_id,
              'toolplane.sandbox.driver': this.driver.name,
              'toolplane.sandbox.isolated': this.driver.isolated,
            });
            try {
              if (abort.signal.aborted) return abandonedOutcome();
              const o = await this.driver.run(spec, abort.signal);
              span.setAttributes({
                'toolplane.status': o.status,
                'toolplane.sandbox.duration_ms': o.durationMs,
                'toolplane.sandbox.warm': o.warm ?? false,
              });
              if (o.error) span.setStatus({ code: SpanStatusCode.ERROR, message: o.error.kind });
              return o;
            } finally {
              span.end();
            }
          }),
        ));
      const reply = this.toReply(req.function_name, outcome);
      if (networkRefused) reply.stderr.unshift(NETWORK_REFUSED_NOTE);
      const queueSeconds =
        (outcome.admittedAt !== undefined ? outcome.admittedAt - received : 0) / 1000 + (outcome.queueMs ?? 0) / 1000;
      this.metrics.recordRun(reply.status, reply.error?.code, queueSeconds, outcome.durationMs / 1000);
      return reply;
    } finally {
      if (req.run_id) this.running.delete(req.run_id);
      served?.removeEventListener('abort', stop);
      this.metrics.inFlight--;
    }
  }

  /** Runs `fn` once the org's call has a place (RUNNER_MAX_CONCURRENCY, per org, orgs in turn). */
  private async admitted(
    org: string,
    signal: AbortSignal,
    fn: () => Promise<SandboxRunOutcome>,
  ): Promise<SandboxRunOutcome & { admittedAt: number }> {
    this.metrics.queued++;
    let release: () => void;
    try {
      // A call given up while it waits leaves the queue: it never takes a place.
      release = await this.queue.acquire(org, signal);
    } catch {
      return { ...abandonedOutcome(), admittedAt: performance.now() };
    } finally {
      this.metrics.queued--;
    }
    const admittedAt = performance.now();
    try {
      return { ...(await fn()), admittedAt };
    } finally {
      release();
    }
  }

  private specOf(req: RunRequest, network: boolean): SandboxRunSpec {
    // The final env, from its one owner (credentials): used as it is.
    const env = req.env;
    return {
      runId: req.run_id ?? randomUUID(),
      sourceCode: req.source_code,
      functionName: req.function_name,
      args: req.args,
      env,
      // Masked inside the runner, before the output is cut (the executor masks again).
      maskValues: (req.masked_keys ?? []).map((k) => env[k]).filter((v): v is string => typeof v === 'string'),
      timeoutMs: req.timeout_ms,
      agentId: req.agent_id,
      limits: {
        stdoutBytes: this.config.RUNNER_STDOUT_LIMIT_BYTES,
        stderrBytes: this.config.RUNNER_STDERR_LIMIT_BYTES,
        maxOutputBytes: Math.min(req.sandbox?.max_output_bytes ?? Infinity, this.config.RUNNER_MAX_OUTPUT_BYTES),
      },
      isolation: isolationOf(req.sandbox, this.config.RUNNER_MAX_MEMORY_MB),
      network,
      ...environmentSpecOf(req),
    };
  }

  async onModuleDestroy(): Promise<void> {
    this.abandonments?.unsubscribe();
    await this.driver.close();
  }

  private toReply(
    functionName: string,
    o: SandboxRunOutcome & { admittedAt?: number },
  ): ReplyOf<typeof LocalRunnerRun> {
    const stdout = withNote(o.stdout, o.stdoutTruncated, this.config.RUNNER_STDOUT_LIMIT_BYTES);
    const stderr = withNote(o.stderr, o.stderrTruncated, this.config.RUNNER_STDERR_LIMIT_BYTES);
    if (!this.driver.isolated) stderr.unshift(UNSAFE_NOTE);
    const common = { stdout, stderr, duration_ms: o.durationMs, provider: 'local', sandbox_config_fingerprint: null };
    if (o.status === 'success') return { status: 'success', func_return: o.value ?? null, ...common };
    const err = o.error ?? {
      kind: 'crashed' as const,
      type: 'SandboxError',
      message: 'the sandbox ended without a result',
    };
    if (err.kind !== 'exception')
      this.log.warn(`run of ${functionName} ended with ${err.kind}: ${err.message.slice(0, 500)}`);
    return {
      status: 'error',
      func_return: formatToolError(functionName, err.type, err.message),
      ...common,
      error: { code: CODE_BY_KIND[err.kind], message: err.message },
    };
  }
}

/** A call abandoned while it waited for its place: it never ran. */
function abandonedOutcome(): SandboxRunOutcome {
  return { ...failed('crashed', 'Abandoned', 'the executor gave this call up before it ran'), durationMs: 0 };
}

function isolationOf(s: RunRequest['sandbox'], maxMemoryMb: number): IsolationLimits | undefined {
  if (!s) return undefined;
  return {
    memoryBytes: s.memory_mb !== undefined ? Math.min(s.memory_mb, maxMemoryMb) * MB : undefined,
    cpuSeconds: s.cpu_seconds,
    processes: s.processes,
    openFiles: s.open_files,
    fileBytes: s.file_size_mb !== undefined ? s.file_size_mb * MB : undefined,
    workDirBytes: s.work_dir_mb !== undefined ? s.work_dir_mb * MB : undefined,
  };
}

function withNote(text: string, truncated: boolean, limit: number): string[] {
  if (!text) return [];
  return [truncated ? `${text}\n[... output truncated: only the first ${limit} bytes are kept]` : text];
}
