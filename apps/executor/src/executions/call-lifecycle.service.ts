import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import {
  ErrorCode,
  NOT_STARTED_CODES,
  ToolplaneError,
  type ExecuteReply,
  type Tool,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { currentRequestDeadline, currentRequestSignal } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { newExecutionId } from '../records/execution-id';
import { OutcomeWaiter } from '../records/outcome-waiter';
import {
  argsHashOf,
  ExecutionRecords,
  syntheticResult,
  type ExecutionRow,
  type OpenState,
  type RecordDraft,
} from '../records/records.service';
import { step, type CallRequest } from '../calls/call';
import { asToolplaneError, errorResult, waitingReply, withExecutionId } from './call-outcomes';
import { ToolRunner } from './tool-runner';

/** How a checked call goes on: run it, hold it for approval, or hand it to the client. */
export type CallKind = 'run' | 'approval' | 'client';

/** A call as tools.execute (or a batch) gives it, once its tool is known and its args checked. */
export interface CheckedCall extends CallRequest {
  mode: 'sync' | 'async';
  /** The tool set the call is made through (its membership and approval already decided): recorded. */
  toolset?: string;
  idempotency_key?: string;
  batch_id?: string;
  call_id?: string;
}

/**
 * One call through its record: the answer-first path of plain sync calls (recorded just after,
 * write-behind), and the durable path of the others (record committed first): idempotent calls,
 * async calls, calls held for approval and client-side calls. Also runs calls this executor has
 * claimed (an approved call, an async call from the work queue) and records their outcome before
 * answering.
 */
@Injectable()
export class CallLifecycle implements OnModuleDestroy {
  private readonly log = new Logger(CallLifecycle.name);
  private stopping = false;

  constructor(
    private readonly runner: ToolRunner,
    private readonly records: ExecutionRecords,
    private readonly waiter: OutcomeWaiter,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  onModuleDestroy(): void {
    this.stopping = true;
  }

  draft(tool: Tool | null, call: CheckedCall, toolName?: string): RecordDraft {
    return {
      executionId: newExecutionId(),
      orgId: call.org_id,
      agentId: call.agent_id ?? null,
      userId: call.user_id ?? null,
      toolset: call.toolset ?? null,
      tool,
      toolName: toolName ?? null,
      mode: call.mode,
      traceId: trace.getActiveSpan()?.spanContext().traceId ?? '',
      idempotencyKey: call.idempotency_key ?? null,
      argsHash: tool && call.idempotency_key ? argsHashOf(tool.id, call.args) : null,
      batchId: call.batch_id ?? null,
      callId: call.call_id ?? null,
      timeoutMs: call.timeout_ms ?? null,
    };
  }

  /** Whether the call takes the answer-first path (recorded just after it answers). */
  answersFirst(kind: CallKind, call: CheckedCall): boolean {
    return kind === 'run' && call.mode === 'sync' && !call.idempotency_key;
  }

  /** A plain sync call: run, answer, recorded just after (write-behind). A failure is recorded too, and names the execution. */
  async runThenRecord(
    tool: Tool,
    call: CheckedCall,
    draft: RecordDraft,
    started: number,
  ): Promise<ToolExecutionResult> {
    const startedAt = new Date();
    let result: ToolExecutionResult;
    try {
      result = await this.runner.run(tool, call, started, draft.executionId);
    } catch (e) {
      const err = asToolplaneError(e, this.log);
      await this.records.recordAfter(draft, errorResult(draft.executionId, err, started, draft.traceId), startedAt);
      throw withExecutionId(err, draft.executionId);
    }
    await this.records.recordAfter(draft, result, startedAt);
    return result;
  }

  /** A durable call: its record committed first (idempotency key taken), then run, held or handed over. */
  async start(
    tool: Tool,
    call: CheckedCall,
    kind: CallKind,
    draft: RecordDraft,
    started: number,
  ): Promise<ExecuteReply> {
    const state: OpenState =
      kind === 'approval'
        ? 'pending_approval'
        : kind === 'client'
          ? 'awaiting_client'
          : call.mode === 'async'
            ? 'queued'
            : 'running';
    const stored = state === 'running' ? undefined : { args: call.args, ...(call.env ? { env: call.env } : {}) };
    const opened = await step('record', (span) => {
      span.setAttribute('toolplane.execution.state', state);
      return this.records.open(draft, state, stored);
    });
    if (!opened.created) {
      if (!opened.sameRequest) {
        throw new ToolplaneError(
          ErrorCode.IDEMPOTENCY_CONFLICT,
          'This idempotency key was used for another tool, other arguments, another user_id or another toolset: nothing ran',
          {
            execution_id: opened.row.execution_id,
          },
        );
      }
      return this.answerExisting(opened.row, call);
    }
    if (state === 'running') return this.runClaimed(opened.row, tool, call, started);
    return waitingReply(opened.row, call.args);
  }

  /**
   * Runs a record this executor claimed and records the outcome before answering. A failure that
   * proves the tool did not start also lets its idempotency key go (a retry may run it).
   */
  async runClaimed(row: ExecutionRow, tool: Tool, call: CallRequest, started: number): Promise<ToolExecutionResult> {
    let result: ToolExecutionResult;
    let failure: ToolplaneError | undefined;
    try {
      result = await this.runner.run(tool, call, started, row.execution_id);
    } catch (e) {
      failure = asToolplaneError(e, this.log);
      result = errorResult(row.execution_id, failure, started, row.trace_id);
    }
    await this.record(row, result);
    if (failure && NOT_STARTED_CODES.has(failure.code)) await this.records.releaseKey(row).catch(() => undefined);
    if (failure) throw withExecutionId(failure, row.execution_id);
    return result;
  }

  /** The outcome of a claimed run, recorded before the answer; if Postgres is away, recorded as soon as it is back (the answer does not wait). */
  private async record(row: ExecutionRow, result: ToolExecutionResult): Promise<void> {
    try {
      await this.records.finish(row, result);
    } catch (e) {
      this.log.warn(
        `recording execution ${row.execution_id} failed: ${(e as Error).message}; retrying in the background`,
      );
      void this.records
        .finishDurably(row, result, () => this.stopping)
        .catch((e2: Error) => this.log.error(`execution ${row.execution_id} was not recorded: ${e2.message}`));
    }
  }

  /**
   * A retry with the same idempotency key, tool and args: the first call's outcome, never a second
   * run. A sync retry of a call still queued or running waits for it (until its own deadline:
   * then EXECUTION_IN_PROGRESS); an async retry answers the state at once.
   */
  async answerExisting(row: ExecutionRow, call: CheckedCall): Promise<ExecuteReply> {
    let r = row;
    if (call.mode === 'sync' && (r.status === 'queued' || r.status === 'running')) {
      r =
        (await this.waiter.until(
          r.org_id,
          r.execution_id,
          this.deadlineOf(call),
          (x) => x.status !== 'queued' && x.status !== 'running',
          currentRequestSignal(),
        )) ?? r;
    }
    if (r.status === 'pending_approval' || r.status === 'awaiting_client') return waitingReply(r, call.args);
    if (call.mode === 'async') return { execution_id: r.execution_id, status: r.status };
    if (r.status === 'queued' || r.status === 'running') {
      throw new ToolplaneError(
        ErrorCode.EXECUTION_IN_PROGRESS,
        `The call with this idempotency key is still ${r.status}: ask again later (nothing ran twice)`,
        {
          execution_id: r.execution_id,
          status: r.status,
        },
      );
    }
    return (await this.records.resultOf(r)) ?? syntheticResult(r);
  }

  /** How long a duplicate may wait: the caller's deadline when it sent one, else the call's own timeout. */
  private deadlineOf(call: CallRequest): number {
    const own =
      Date.now() +
      Math.min(call.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS, this.config.EXECUTE_MAX_TIMEOUT_MS) +
      this.config.RUNNER_REPLY_MARGIN_MS;
    const caller = currentRequestDeadline();
    return caller ? Math.min(caller, own) : own;
  }
}
