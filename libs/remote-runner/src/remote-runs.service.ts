import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ErrorCode, RUNNERS, ToolplaneError, type EnvironmentStatus, type RequestOf } from '@toolplane/contracts';
import { currentRequestDeadline, type MessagingClient } from '@toolplane/messaging';
import { RunnerCalls } from '@toolplane/platform';
import { formatToolError } from '@toolplane/sandbox';
import { randomUUID } from 'node:crypto';
import { dependencyOutcome, type RemoteCall, type RemoteCallOutcome, type RemoteDriver } from './remote-driver';
import { isDependencyFailure, type RemoteEnvironment, type RemotePool } from './remote-pool';
import type { RemoteEnvironmentRequest, RemoteProvider, RemoteRunReply, RemoteRunRequest } from './remote-provider';
import type { RemoteRunnerMetrics } from './remote-runs.metrics';

type EnvironmentAsk = RequestOf<(typeof RUNNERS)['e2b']['environment']>;

/** Time kept, between the caller's deadline and the tool's own timeout, to answer. */
const REPLY_ROOM_MS = 1000;

/** A remote runner's settings the runs service reads (its config, by the provider's names). */
export interface RemoteRunsSettings {
  maxConcurrency: number;
  maxConcurrencyPerOrg?: number;
  /** How long a call waits for its environment (a sandbox made, its requirements installed) before ENVIRONMENT_BUILDING. */
  buildWaitMs: number;
  stdoutLimitBytes: number;
  stderrLimitBytes: number;
}

/**
 * The runs service of a remote runner (runner-e2b, runner-modal): a call's environment is made
 * ready (a sandbox made, its requirements installed) before the call takes a place — a build never
 * holds a place other orgs' calls wait for —, then the call runs in a leased sandbox (RemoteDriver)
 * and its outcome becomes the runner reply. Abandoned calls (the executor's broadcast) are stopped.
 */
export class RemoteRunsService<R extends RemoteEnvironmentRequest, B> implements OnModuleInit, OnModuleDestroy {
  private readonly log: Logger;
  /** Places and abort signals of the calls served (abandoned by the executor: stopped). */
  private readonly calls: RunnerCalls;

  constructor(
    private readonly provider: RemoteProvider<R, B>,
    private readonly pool: RemotePool<R, B>,
    private readonly driver: RemoteDriver<R, B>,
    private readonly settings: RemoteRunsSettings,
    private readonly metrics: RemoteRunnerMetrics,
    messaging: MessagingClient,
  ) {
    this.log = new Logger(`${provider.label}RunsService`);
    this.calls = new RunnerCalls(
      messaging,
      RUNNERS[provider.name].abandoned,
      settings.maxConcurrency,
      settings.maxConcurrencyPerOrg,
      metrics,
    );
  }

  onModuleInit(): void {
    this.calls.start();
  }

  onModuleDestroy(): void {
    this.calls.stop();
    // The sandboxes stay: a restarted runner finds them again by their tags (the provider's timeout ends the rest).
    this.pool.close();
  }

  async run(req: RemoteRunRequest): Promise<RemoteRunReply> {
    const received = performance.now();
    this.metrics.inFlight++;
    try {
      return await this.calls.track(req.run_id, async (signal) => {
        let admittedAt: number | undefined;
        try {
          const env = this.environmentOf(req);
          const waitMs = this.buildWaitMs(req.timeout_ms);
          const call = this.callOf(req);
          // The environment before the call takes a place: a build never holds a place other orgs' calls wait for.
          const early = await this.pool.ensureReady(env, waitMs, signal).then(
            () => undefined,
            (e: unknown) => {
              if (isDependencyFailure(e)) return dependencyOutcome(e as Error);
              if (e instanceof ToolplaneError) throw e;
              throw this.provider.providerError(e, env, 'getting a sandbox');
            },
          );
          const outcome =
            early ??
            (await this.calls.admitted(req.org_id, signal, () => {
              admittedAt = performance.now();
              return this.driver.run(env, call, waitMs, signal);
            }));
          const reply = this.toReply(req, outcome);
          this.metrics.recordRun(
            reply.status,
            reply.error?.code,
            ((admittedAt ?? performance.now()) - received) / 1000,
            outcome.durationMs / 1000,
          );
          return reply;
        } catch (e) {
          this.metrics.recordRun(
            'rejected',
            e instanceof ToolplaneError ? e.code : ErrorCode.INTERNAL,
            (performance.now() - received) / 1000,
            0,
          );
          throw e;
        }
      });
    } finally {
      this.metrics.inFlight--;
    }
  }

  /** The state of the call's environment; `prepare` starts filling it (a sandbox made, requirements installed) in the background. */
  environment(req: EnvironmentAsk): EnvironmentStatus {
    const env = this.environmentOf(req);
    if (req.prepare && this.pool.status(env) !== 'ready') this.pool.prepare(env);
    const status = this.pool.status(env);
    return {
      provider: this.provider.name,
      status,
      requirements_hash: env.requirementsHash,
      ...(status === 'building' && env.progress ? { progress: env.progress } : {}),
      ...(status === 'failed' && env.error ? { error: env.error } : {}),
      updated_at: new Date(env.updatedAt).toISOString(),
    };
  }

  private environmentOf(ask: EnvironmentAsk | RemoteRunRequest): RemoteEnvironment<R, B> {
    const req = this.provider.request(ask);
    return this.pool.environment(req, this.provider.keys(req));
  }

  /** How long a call waits for its environment: the build wait, but never so long that the tool's own timeout no longer fits before the caller's deadline. */
  private buildWaitMs(timeoutMs: number): number {
    const deadline = currentRequestDeadline();
    const bound = deadline === undefined ? Infinity : deadline - Date.now() - timeoutMs - REPLY_ROOM_MS;
    return Math.max(0, Math.min(this.settings.buildWaitMs, bound));
  }

  private callOf(req: RemoteRunRequest): RemoteCall {
    const env = req.env;
    return {
      runId: req.run_id ?? randomUUID(),
      toolId: req.tool_id,
      functionName: req.function_name,
      sourceCode: req.source_code,
      sourceType: req.source_type,
      args: req.args,
      agentId: req.agent_id,
      env,
      // Masked in the runner before the output is cut (the executor masks again).
      maskValues: (req.masked_keys ?? []).map((k) => env[k]).filter((v): v is string => typeof v === 'string'),
      timeoutMs: req.timeout_ms,
    };
  }

  private toReply(req: RemoteRunRequest, o: RemoteCallOutcome): RemoteRunReply {
    const common = {
      stdout: withNote(o.stdout, o.stdoutTruncated, this.settings.stdoutLimitBytes),
      stderr: withNote(o.stderr, o.stderrTruncated, this.settings.stderrLimitBytes),
      duration_ms: o.durationMs,
      provider: this.provider.name,
      sandbox_config_fingerprint: req.sandbox_config_fingerprint ?? null,
    };
    if (o.status === 'success') return { status: 'success', func_return: o.value ?? null, ...common };
    const err = o.error ?? {
      code: ErrorCode.SANDBOX_FAILURE,
      type: 'SandboxError',
      message: 'the sandbox ended without a result',
    };
    if (err.code !== ErrorCode.TOOL_EXCEPTION)
      this.log.warn(
        `run of ${req.function_name} (tool ${req.tool_id}) ended with ${err.code}: ${err.message.slice(0, 500)}`,
      );
    return {
      status: 'error',
      func_return: formatToolError(req.function_name, err.type, err.message),
      ...common,
      error: { code: err.code, message: err.message },
    };
  }
}

function withNote(text: string, truncated: boolean, limit: number): string[] {
  if (!text) return [];
  return [truncated ? `${text}\n[... output truncated: only the first ${limit} bytes are kept]` : text];
}
