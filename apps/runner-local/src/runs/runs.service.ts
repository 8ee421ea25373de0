import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ErrorCode, type LocalRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { formatToolError, type SandboxDriver, type SandboxErrorKind, type SandboxRunOutcome } from '@toolplane/sandbox';
import { randomUUID } from 'node:crypto';
import type { RunnerConfig } from '../runner-local.config';
import { Semaphore } from './semaphore';

export const SANDBOX_DRIVER = Symbol('SANDBOX_DRIVER');

const CODE_BY_KIND: Record<SandboxErrorKind, ErrorCode> = {
  exception: ErrorCode.TOOL_EXCEPTION,
  timeout: ErrorCode.EXECUTION_TIMEOUT,
  output_limit: ErrorCode.OUTPUT_LIMIT_EXCEEDED,
  crashed: ErrorCode.SANDBOX_FAILURE,
  protocol: ErrorCode.SANDBOX_FAILURE,
  spawn_failed: ErrorCode.SANDBOX_FAILURE,
};

const tracer = trace.getTracer('runner-local');

@Injectable()
export class RunsService implements OnModuleDestroy {
  private readonly log = new Logger(RunsService.name);
  private readonly slots: Semaphore;

  constructor(
    @Inject(SANDBOX_DRIVER) private readonly driver: SandboxDriver,
    @Inject(APP_CONFIG) private readonly config: RunnerConfig,
  ) {
    this.slots = new Semaphore(config.RUNNER_MAX_CONCURRENCY);
  }

  async run(req: RequestOf<typeof LocalRunnerRun>): Promise<ReplyOf<typeof LocalRunnerRun>> {
    const release = await this.slots.acquire();
    try {
      const outcome = await tracer.startActiveSpan('run sandbox', async (span) => {
        span.setAttributes({ 'toolplane.tool.id': req.tool_id, 'toolplane.sandbox.driver': this.driver.name });
        try {
          const o = await this.driver.run({
            runId: randomUUID(),
            sourceCode: req.source_code,
            functionName: req.function_name,
            args: req.args,
            env: req.env,
            timeoutMs: req.timeout_ms,
            agentId: req.agent_id,
            limits: {
              stdoutBytes: this.config.RUNNER_STDOUT_LIMIT_BYTES,
              stderrBytes: this.config.RUNNER_STDERR_LIMIT_BYTES,
              maxOutputBytes: this.config.RUNNER_MAX_OUTPUT_BYTES,
            },
          });
          span.setAttributes({ 'toolplane.status': o.status, 'toolplane.sandbox.duration_ms': o.durationMs });
          if (o.error) span.setStatus({ code: SpanStatusCode.ERROR, message: o.error.kind });
          return o;
        } finally {
          span.end();
        }
      });
      return this.toReply(req.function_name, outcome);
    } finally {
      release();
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.driver.close();
  }

  private toReply(functionName: string, o: SandboxRunOutcome): ReplyOf<typeof LocalRunnerRun> {
    const stdout = withNote(o.stdout, o.stdoutTruncated, this.config.RUNNER_STDOUT_LIMIT_BYTES);
    const stderr = withNote(o.stderr, o.stderrTruncated, this.config.RUNNER_STDERR_LIMIT_BYTES);
    const common = { stdout, stderr, duration_ms: o.durationMs, provider: 'local', sandbox_config_fingerprint: null };
    if (o.status === 'success') return { status: 'success', func_return: o.value ?? null, ...common };
    const err = o.error ?? { kind: 'crashed' as const, type: 'SandboxError', message: 'the sandbox ended without a result' };
    if (err.kind !== 'exception') this.log.warn(`run of ${functionName} ended with ${err.kind}: ${err.message}`);
    return {
      status: 'error',
      func_return: formatToolError(functionName, err.type, err.message),
      ...common,
      error: { code: CODE_BY_KIND[err.kind], message: err.message },
    };
  }
}

function withNote(text: string, truncated: boolean, limit: number): string[] {
  if (!text) return [];
  return [truncated ? `${text}\n[... output truncated: only the first ${limit} bytes are kept]` : text];
}
