import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { E2bRunAbandoned, ErrorCode, ToolplaneError, type E2bRunnerEnvironment, type E2bRunnerRun, type EnvironmentStatus, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { currentRequestDeadline, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, RunnerCalls } from '@toolplane/platform';
import { formatToolError, pipSpecifiers } from '@toolplane/sandbox';
import { randomUUID } from 'node:crypto';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { E2bDriver, type E2bCall, type E2bOutcome } from '../sandboxes/e2b.driver';
import { SandboxPool, type EnvironmentRequest } from '../sandboxes/sandbox-pool';
import { E2bRunnerMetrics } from './runs.metrics';

type RunRequest = RequestOf<typeof E2bRunnerRun>;
type RunReply = ReplyOf<typeof E2bRunnerRun>;
type EnvironmentAsk = RequestOf<typeof E2bRunnerEnvironment>;

/** Time kept, between the caller's deadline and the tool's own timeout, to answer. */
const REPLY_ROOM_MS = 1000;
const NPM_SPEC = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(@[A-Za-z0-9.^~<>=|*+ -]{1,64})?$/;

@Injectable()
export class RunsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RunsService.name);
  /** Places and abort signals of the calls served (abandoned by the executor: stopped). */
  private readonly calls: RunnerCalls;

  constructor(
    private readonly driver: E2bDriver,
    private readonly pool: SandboxPool,
    @Inject(APP_CONFIG) private readonly config: E2bRunnerConfig,
    private readonly metrics: E2bRunnerMetrics,
    private readonly messaging: MessagingClient,
  ) {
    this.calls = new RunnerCalls(messaging, E2bRunAbandoned, config.E2B_MAX_CONCURRENCY, config.E2B_MAX_CONCURRENCY_PER_ORG, metrics);
  }

  onModuleInit(): void {
    this.calls.start();
  }

  onModuleDestroy(): void {
    this.calls.stop();
    // The sandboxes stay: a restarted runner finds them again by their tags (E2B's timeout ends the rest).
    this.pool.close();
  }

  async run(req: RunRequest): Promise<RunReply> {
    const received = performance.now();
    this.metrics.inFlight++;
    try {
      return await this.calls.track(req.run_id, async (signal) => {
        let admittedAt: number | undefined;
        try {
          const env = this.driver.environment(this.environmentRequest(req));
          const call = this.callOf(req);
          // The environment (a sandbox made, its requirements installed) before the call takes a place:
          // a build never holds a place other orgs' calls wait for, and never runs on the hot path for long.
          const early = await this.driver.prepare(env, this.buildWaitMs(req.timeout_ms), signal);
          const outcome =
            early ??
            (await this.calls.admitted(req.org_id, signal, () => {
              admittedAt = performance.now();
              return this.driver.run(env, call, signal);
            }));
          const reply = this.toReply(req, outcome);
          this.metrics.recordRun(reply.status, reply.error?.code, ((admittedAt ?? performance.now()) - received) / 1000, outcome.durationMs / 1000);
          return reply;
        } catch (e) {
          this.metrics.recordRun('rejected', e instanceof ToolplaneError ? e.code : ErrorCode.INTERNAL, (performance.now() - received) / 1000, 0);
          throw e;
        }
      });
    } finally {
      this.metrics.inFlight--;
    }
  }

  /** The state of the call's environment; `prepare` starts its build (a sandbox made, requirements installed) in the background. */
  environment(req: EnvironmentAsk): EnvironmentStatus {
    const env = this.driver.environment(this.environmentRequest(req));
    let status = this.pool.status(env);
    if (req.prepare && (status === 'none' || status === 'failed')) {
      this.pool.startBuild(env);
      status = this.pool.status(env);
    }
    return {
      provider: 'e2b',
      status,
      requirements_hash: env.requirementsHash,
      ...(status === 'building' && env.progress ? { progress: env.progress } : {}),
      ...(status === 'failed' && env.error ? { error: env.error } : {}),
      updated_at: new Date(env.updatedAt).toISOString(),
    };
  }

  /** How long a call waits for its environment: E2B_BUILD_WAIT_MS, but never so long that the tool's own timeout no longer fits before the caller's deadline. */
  private buildWaitMs(timeoutMs: number): number {
    const deadline = currentRequestDeadline();
    const bound = deadline === undefined ? Infinity : deadline - Date.now() - timeoutMs - REPLY_ROOM_MS;
    return Math.max(0, Math.min(this.config.E2B_BUILD_WAIT_MS, bound));
  }

  private environmentRequest(req: Pick<RunRequest, 'org_id' | 'provider_credentials' | 'sandbox_config_fingerprint' | 'sandbox' | 'pip_requirements' | 'npm_requirements' | 'source_type'>): EnvironmentRequest {
    // The org's own key (its provider-scoped secret), else the runner's: never another org's.
    const apiKey = req.provider_credentials?.E2B_API_KEY ?? this.config.E2B_API_KEY;
    if (!apiKey) {
      throw new ToolplaneError(ErrorCode.PROVIDER_AUTH_FAILED, 'No E2B API key for this org: set the sandbox secret E2B_API_KEY (scope sandbox, provider e2b), or E2B_API_KEY of runner-e2b', { provider: 'e2b' });
    }
    let pip: string[];
    try {
      pip = req.source_type === 'python' ? pipSpecifiers(req.pip_requirements ?? []) : [];
    } catch (e) {
      throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `pip requirements: ${(e as Error).message}`);
    }
    const npm = req.source_type === 'python' ? [] : (req.npm_requirements ?? []).map((r) => (r.version ? `${r.name}@${r.version}` : r.name)).sort();
    const bad = npm.find((s) => !NPM_SPEC.test(s));
    if (bad) throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `npm requirements: ${JSON.stringify(bad)} is not a package name and version`);
    return {
      org: req.org_id,
      account: { apiKey },
      fingerprint: req.sandbox_config_fingerprint ?? null,
      template: req.sandbox?.template ?? this.config.E2B_TEMPLATE,
      network: req.sandbox?.network ?? this.config.E2B_NETWORK,
      lanes: req.sandbox?.calls_per_sandbox ?? 1,
      pip,
      npm,
      buildScripts: req.sandbox?.build_scripts === true,
    };
  }

  private callOf(req: RunRequest): E2bCall {
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

  private toReply(req: RunRequest, o: E2bOutcome): RunReply {
    const common = {
      stdout: withNote(o.stdout, o.stdoutTruncated, this.config.E2B_STDOUT_LIMIT_BYTES),
      stderr: withNote(o.stderr, o.stderrTruncated, this.config.E2B_STDERR_LIMIT_BYTES),
      duration_ms: o.durationMs,
      provider: 'e2b',
      sandbox_config_fingerprint: req.sandbox_config_fingerprint ?? null,
    };
    if (o.status === 'success') return { status: 'success', func_return: o.value ?? null, ...common };
    const err = o.error ?? { code: ErrorCode.SANDBOX_FAILURE, type: 'SandboxError', message: 'the sandbox ended without a result' };
    if (err.code !== ErrorCode.TOOL_EXCEPTION) this.log.warn(`run of ${req.function_name} (tool ${req.tool_id}) ended with ${err.code}: ${err.message.slice(0, 500)}`);
    return { status: 'error', func_return: formatToolError(req.function_name, err.type, err.message), ...common, error: { code: err.code, message: err.message } };
  }
}

function withNote(text: string, truncated: boolean, limit: number): string[] {
  if (!text) return [];
  return [truncated ? `${text}\n[... output truncated: only the first ${limit} bytes are kept]` : text];
}
