import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ErrorCode, ModalRunAbandoned, ToolplaneError, type EnvironmentStatus, type ModalRunnerEnvironment, type ModalRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { currentRequestDeadline, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, RunnerCalls } from '@toolplane/platform';
import { formatToolError, pipSpecifiers } from '@toolplane/sandbox';
import { randomUUID } from 'node:crypto';
import type { ModalRunnerConfig } from '../runner-modal.config';
import type { EnvironmentRequest } from '../sandboxes/environments';
import { ModalDriver, type ModalCall, type ModalOutcome } from '../sandboxes/modal.driver';
import { SandboxPool } from '../sandboxes/sandbox-pool';
import { ModalRunnerMetrics } from './runs.metrics';

type RunRequest = RequestOf<typeof ModalRunnerRun>;
type RunReply = ReplyOf<typeof ModalRunnerRun>;
type EnvironmentAsk = RequestOf<typeof ModalRunnerEnvironment>;

/** Source types that run on Node (the image then has it: MODAL_NODE_INSTALL). */
const NODE_TYPES = new Set(['typescript', 'javascript']);

/** Time kept, between the caller's deadline and the tool's own timeout, to answer. */
const REPLY_ROOM_MS = 1000;

@Injectable()
export class RunsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RunsService.name);
  /** Places and abort signals of the calls served (abandoned by the executor: stopped). */
  private readonly calls: RunnerCalls;

  constructor(
    private readonly driver: ModalDriver,
    private readonly pool: SandboxPool,
    @Inject(APP_CONFIG) private readonly config: ModalRunnerConfig,
    private readonly metrics: ModalRunnerMetrics,
    private readonly messaging: MessagingClient,
  ) {
    this.calls = new RunnerCalls(messaging, ModalRunAbandoned, config.MODAL_MAX_CONCURRENCY, config.MODAL_MAX_CONCURRENCY_PER_ORG, metrics);
  }

  onModuleInit(): void {
    this.calls.start();
  }

  onModuleDestroy(): void {
    this.calls.stop();
    // The sandboxes stay: a restarted runner finds them again by their tags (Modal's timeout ends the rest).
    this.pool.close();
  }

  async run(req: RunRequest): Promise<RunReply> {
    const received = performance.now();
    this.metrics.inFlight++;
    try {
      return await this.calls.track(req.run_id, async (signal) => {
        try {
          const env = this.driver.environment(this.environmentRequest(req));
          const outcome = await this.calls.admitted(req.org_id, signal, () => this.driver.run(env, this.callOf(req), this.buildWaitMs(req.timeout_ms), signal));
          const reply = this.toReply(req, outcome);
          this.metrics.recordRun(reply.status, reply.error?.code, (performance.now() - received) / 1000);
          return reply;
        } catch (e) {
          if (e instanceof ToolplaneError && e.code === ErrorCode.DEPENDENCY_INSTALL_FAILED) {
            // Requirements that do not install are the call's outcome, like on every runner.
            const reply = this.toReply(req, { status: 'error', error: { code: ErrorCode.DEPENDENCY_INSTALL_FAILED, type: 'DependencyInstallFailed', message: e.message }, stdout: '', stderr: '', stdoutTruncated: false, stderrTruncated: false, durationMs: 0, reused: false });
            this.metrics.recordRun('error', ErrorCode.DEPENDENCY_INSTALL_FAILED, (performance.now() - received) / 1000);
            return reply;
          }
          this.metrics.recordRun('rejected', e instanceof ToolplaneError ? e.code : ErrorCode.INTERNAL, (performance.now() - received) / 1000);
          throw e;
        }
      });
    } finally {
      this.metrics.inFlight--;
    }
  }

  /** The state of the call's environment; `prepare` fills its warm pool in the background. */
  environment(req: EnvironmentAsk): EnvironmentStatus {
    const env = this.driver.environment(this.environmentRequest(req));
    if (req.prepare) this.pool.prepare(env);
    const status = this.pool.status(env);
    return {
      provider: 'modal',
      status,
      requirements_hash: null,
      ...(status === 'failed' && env.lastError ? { error: { code: env.lastError instanceof ToolplaneError ? env.lastError.code : ErrorCode.PROVIDER_UNAVAILABLE, message: env.lastError.message } } : {}),
      updated_at: new Date().toISOString(),
    };
  }

  /** How long a call waits for a sandbox: MODAL_BUILD_WAIT_MS, never so long that the tool's own timeout no longer fits before the caller's deadline. */
  private buildWaitMs(timeoutMs: number): number {
    const deadline = currentRequestDeadline();
    const bound = deadline === undefined ? Infinity : deadline - Date.now() - timeoutMs - REPLY_ROOM_MS;
    return Math.max(0, Math.min(this.config.MODAL_BUILD_WAIT_MS, bound));
  }

  private environmentRequest(req: Pick<RunRequest, 'org_id' | 'provider_credentials' | 'sandbox_config_fingerprint' | 'sandbox' | 'pip_requirements' | 'npm_requirements' | 'source_type'>): EnvironmentRequest {
    // The org's own token pair (its provider-scoped secrets), else the runner's: never another org's, never half of each.
    const own = req.provider_credentials?.MODAL_TOKEN_ID !== undefined || req.provider_credentials?.MODAL_TOKEN_SECRET !== undefined;
    const tokenId = own ? req.provider_credentials?.MODAL_TOKEN_ID : this.config.MODAL_TOKEN_ID;
    const tokenSecret = own ? req.provider_credentials?.MODAL_TOKEN_SECRET : this.config.MODAL_TOKEN_SECRET;
    if (!tokenId || !tokenSecret) {
      throw new ToolplaneError(ErrorCode.PROVIDER_AUTH_FAILED, 'No Modal token for this org: set the sandbox secrets MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (scope sandbox, provider modal), or those of runner-modal', { provider: 'modal' });
    }
    const node = NODE_TYPES.has(req.source_type);
    if (req.source_type !== 'python' && !node) throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `runner-modal runs python, typescript and javascript tools, not ${req.source_type}`, { provider: 'modal' });
    if (node && (req.npm_requirements ?? []).length > 0) {
      throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, 'runner-modal does not install npm requirements yet (its images carry pip requirements only): run this tool on local or e2b', { provider: 'modal', source_type: req.source_type });
    }
    let pip: string[];
    try {
      pip = req.source_type === 'python' ? pipSpecifiers(req.pip_requirements ?? []) : [];
    } catch (e) {
      throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `pip requirements: ${(e as Error).message}`);
    }
    return {
      org: req.org_id,
      account: { tokenId, tokenSecret },
      fingerprint: req.sandbox_config_fingerprint ?? null,
      network: req.sandbox?.network ?? this.config.MODAL_NETWORK,
      cpu: req.sandbox?.cpu ?? this.config.MODAL_CPU,
      memoryMiB: req.sandbox?.memory_mb ?? this.config.MODAL_MEMORY_MIB,
      pip,
      lanes: req.sandbox?.calls_per_sandbox ?? 1,
      node,
    };
  }

  private callOf(req: RunRequest): ModalCall {
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

  private toReply(req: RunRequest, o: ModalOutcome): RunReply {
    const common = {
      stdout: withNote(o.stdout, o.stdoutTruncated, this.config.MODAL_STDOUT_LIMIT_BYTES),
      stderr: withNote(o.stderr, o.stderrTruncated, this.config.MODAL_STDERR_LIMIT_BYTES),
      duration_ms: o.durationMs,
      provider: 'modal',
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
