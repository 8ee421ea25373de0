import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ErrorCode,
  ToolplaneError,
  type BatchCallResult,
  type ExecuteReply,
  type ReplyOf,
  type RequestOf,
  type Tool,
  type ToolsExecute,
  type ToolsExecuteBatch,
} from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import type { ExecutorConfig } from '../executor.config';
import { endUser } from '../records/record.mapper';
import { ExecutionRecords } from '../records/records.service';
import { ApprovalPolicy } from './approval-policy';
import { ArgumentsService } from './arguments.service';
import { CallLifecycle, type CallKind, type CheckedCall } from './call-lifecycle.service';
import { asToolplaneError, errorResult } from './call-outcomes';
import { step } from '../calls/call';
import { ToolCatalogService } from './tool-catalog.service';

const tracer = trace.getTracer('executor');

/**
 * tools.execute and tools.execute-batch: the tool looked up, its args checked, then each call
 * goes its way through its record (CallLifecycle): run and answer (recorded just after), or
 * recorded first — idempotent, async, held for approval, handed to its client.
 */
@Injectable()
export class ExecutionsService {
  private readonly log = new Logger(ExecutionsService.name);

  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly args: ArgumentsService,
    private readonly policy: ApprovalPolicy,
    private readonly calls: CallLifecycle,
    private readonly records: ExecutionRecords,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async execute(req: RequestOf<typeof ToolsExecute>): Promise<ExecuteReply> {
    const started = performance.now();
    // Through a tool set: only its members, found in it first (a tool outside it is not looked up, nor its args checked).
    const ref = req.toolset
      ? { tool_id: await step('resolve toolset member', () => this.policy.memberOf(req.org_id, req.toolset!, req)) }
      : req;
    const tool = await this.lookup(req.org_id, ref);
    await step('validate args', () => this.args.check(req.org_id, tool, req.args));
    const kind = await this.policy.kindOf(req.org_id, tool, { agentId: req.agent_id, toolset: req.toolset });
    const draft = this.calls.draft(tool, req);
    trace.getActiveSpan()?.setAttributes({
      'toolplane.execution.id': draft.executionId,
      ...(req.toolset ? { 'toolplane.toolset': req.toolset } : {}),
      ...endUser(req.user_id),
    });
    if (this.calls.answersFirst(kind, req)) return this.calls.runThenRecord(tool, req, draft, started);
    return this.calls.start(tool, req, kind, draft, started);
  }

  /**
   * One agent step's calls, with Letta's parallel semantics: every call's tool and arguments are
   * checked first (a call that fails here is answered, recorded failed, and never runs); calls
   * that need approval or are client-side are recorded and answered with their state (nothing
   * runs); then the calls to tools with `enable_parallel_execution` run concurrently (at most
   * EXECUTE_BATCH_MAX_CONCURRENCY at once), then the others one by one in their order. Results
   * come in the input order; one call's failure is its own result, never the batch's.
   */
  async executeBatch(req: RequestOf<typeof ToolsExecuteBatch>): Promise<ReplyOf<typeof ToolsExecuteBatch>> {
    const max = this.config.EXECUTE_BATCH_MAX_CALLS;
    if (req.calls.length > max) {
      throw new ToolplaneError(
        ErrorCode.BATCH_TOO_LARGE,
        `A batch takes at most ${max} calls (this one has ${req.calls.length}): nothing ran`,
        { max_calls: max, calls: req.calls.length },
      );
    }
    const started = performance.now();
    const batchId = `batch-${randomUUID()}`;
    trace.getActiveSpan()?.setAttributes(endUser(req.user_id));
    const results: BatchCallResult[] = new Array(req.calls.length);
    const calls = req.calls.map((c) => ({
      call: c,
      checked: {
        org_id: req.org_id,
        args: c.args,
        mode: 'sync',
        batch_id: batchId,
        call_id: c.call_id,
        ...(req.agent_id ? { agent_id: req.agent_id } : {}),
        ...(req.user_id ? { user_id: req.user_id } : {}),
        ...(req.env ? { env: req.env } : {}),
        ...((c.timeout_ms ?? req.timeout_ms) ? { timeout_ms: c.timeout_ms ?? req.timeout_ms } : {}),
      } as CheckedCall,
    }));
    // Checked first, together: tools looked up (cached) and arguments validated; nothing runs yet.
    const checked = await step('check calls', () =>
      Promise.all(
        calls.map(async ({ call, checked: one }, i): Promise<{ tool: Tool; kind: CallKind } | undefined> => {
          try {
            const tool = await this.catalog
              .find(req.org_id, { id: call.tool_id, name: call.tool_name })
              .then((f) => f.tool);
            await this.args.check(req.org_id, tool, one.args);
            return { tool, kind: await this.policy.kindOf(req.org_id, tool, { agentId: req.agent_id }) };
          } catch (e) {
            results[i] = await this.failedCall(call.call_id, one, call.tool_name ?? call.tool_id, e, started);
            return undefined;
          }
        }),
      ),
    );
    // Held for approval or handed to the client: recorded (durably) and answered with their state.
    await step('record waiting calls', () =>
      Promise.all(
        checked.map(async (c, i) => {
          if (!c || c.kind === 'run') return;
          const { call, checked: one } = calls[i]!;
          try {
            const reply = await this.calls.start(c.tool, one, c.kind, this.calls.draft(c.tool, one), started);
            results[i] = { call_id: call.call_id, ...reply } as BatchCallResult;
          } catch (e) {
            results[i] = await this.failedCall(call.call_id, one, c.tool.name ?? undefined, e, started);
          }
        }),
      ),
    );
    const runOne = (i: number) =>
      tracer.startActiveSpan(`call ${calls[i]!.call.call_id.slice(0, 64)}`, async (span) => {
        const { call, checked: one } = calls[i]!;
        const tool = checked[i]!.tool;
        const draft = this.calls.draft(tool, one);
        span.setAttributes({
          'toolplane.call_id': call.call_id,
          'toolplane.tool.id': tool.id,
          'toolplane.batch.index': i,
          'toolplane.execution.id': draft.executionId,
          ...endUser(req.user_id),
        });
        const t0 = performance.now();
        try {
          results[i] = { call_id: call.call_id, ...(await this.calls.runThenRecord(tool, one, draft, t0)) };
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
          results[i] = failedResult(call.call_id, asToolplaneError(e, this.log), t0, draft.executionId);
        } finally {
          span.end();
        }
      });
    const runnable = checked.flatMap((c, i) => (c?.kind === 'run' ? [i] : []));
    const parallel = runnable.filter((i) => checked[i]!.tool.enable_parallel_execution === true);
    const serial = runnable.filter((i) => checked[i]!.tool.enable_parallel_execution !== true);
    await step('run parallel calls', async (span) => {
      span.setAttribute('toolplane.batch.calls', parallel.length);
      let next = 0;
      const worker = async () => {
        while (next < parallel.length) await runOne(parallel[next++]!);
      };
      await Promise.all(
        Array.from({ length: Math.min(this.config.EXECUTE_BATCH_MAX_CONCURRENCY, parallel.length) }, worker),
      );
    });
    await step('run sequential calls', async (span) => {
      span.setAttribute('toolplane.batch.calls', serial.length);
      for (const i of serial) await runOne(i);
    });
    return { results };
  }

  /** A batch call that did not get to run: recorded failed (write-behind), answered in the result's shape. */
  private async failedCall(
    callId: string,
    one: CheckedCall,
    toolName: string | undefined,
    e: unknown,
    started: number,
  ): Promise<BatchCallResult> {
    const err = asToolplaneError(e, this.log);
    const draft = this.calls.draft(null, one, toolName);
    const result = failedResult(callId, err, started, draft.executionId);
    await this.records.recordAfter(draft, errorResult(draft.executionId, err, started, result.trace_id), new Date());
    return result;
  }

  private lookup(orgId: string, ref: { tool_id?: string; tool_name?: string }): Promise<Tool> {
    return step('lookup tool', async (span) => {
      const { tool, cached } = await this.catalog.find(orgId, { id: ref.tool_id, name: ref.tool_name });
      span.setAttributes({
        'toolplane.tool.id': tool.id,
        'toolplane.tool.name': tool.name ?? '',
        'toolplane.cache.hit': cached,
      });
      return tool;
    });
  }
}

/** A batch call that did not produce a tool result: its error in the result's shape, with whether a retry may help (never a thrown batch). */
function failedResult(
  callId: string,
  err: ToolplaneError,
  started: number,
  executionId: string,
): Extract<BatchCallResult, { trace_id: string }> {
  const result = errorResult(executionId, err, started, trace.getActiveSpan()?.spanContext().traceId ?? '');
  return { call_id: callId, ...result, error: { code: err.code, message: err.message, retryable: err.retryable } };
}
