import { Injectable, Logger } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import {
  CLIENT_SIDE_TOOL_TYPES,
  ErrorCode,
  ToolplaneError,
  type ExecuteReply,
  type ExecutionsApprove,
  type ExecutionsDeny,
  type ReplyOf,
  type RequestOf,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { endUser, executionEvent, outcomeEvent, toWireRecord } from '../records/record.mapper';
import { argsHashOf, ExecutionRecords, workItem, type ExecutionRow } from '../records/records.service';
import { ArgumentsService } from './arguments.service';
import { CallLifecycle } from './call-lifecycle.service';
import { waitingReply } from './call-outcomes';
import { executionNotFound, ownRecord } from './own-record';
import { step } from '../calls/call';
import { ToolCatalogService } from './tool-catalog.service';

/** What the agent gets for a denied call: the reference system's tool error, word for word. */
export const denialMessage = (reason: string): string => `Error: request to call tool denied. User reason: ${reason}`;

/**
 * A human's decision on a call held for approval. Approve: the call moves on exactly once (one
 * conditional UPDATE out of pending_approval: a second approve, or one after a deny or expiry, is
 * EXECUTION_NOT_PENDING) and runs here (sync), goes on the work queue (async) or to its client.
 * Deny: nothing runs; the denial is the call's result.
 */
@Injectable()
export class ApprovalsService {
  private readonly log = new Logger(ApprovalsService.name);

  constructor(
    private readonly records: ExecutionRecords,
    private readonly catalog: ToolCatalogService,
    private readonly args: ArgumentsService,
    private readonly calls: CallLifecycle,
  ) {}

  async approve(req: RequestOf<typeof ExecutionsApprove>): Promise<ExecuteReply> {
    const started = performance.now();
    const row = await this.pending(req.org_id, req.execution_id, req.user_id);
    trace.getActiveSpan()?.setAttributes({ 'toolplane.execution.id': row.execution_id, ...endUser(row.user_id) });
    const { tool } = await this.catalog.find(req.org_id, { id: row.tool_id! });
    const stored = await this.records.callOf(row);
    if (!stored)
      throw new ToolplaneError(ErrorCode.INTERNAL, `The arguments of execution ${row.execution_id} are gone`);
    const corrected = req.args !== undefined;
    const args = req.args ?? stored.args;
    // An approver's args are checked like the agent's; a refusal leaves the call pending.
    if (corrected) await step('validate args', () => this.args.check(req.org_id, tool, args));
    const next = CLIENT_SIDE_TOOL_TYPES.has(tool.tool_type)
      ? 'awaiting_client'
      : row.mode === 'async'
        ? 'queued'
        : 'running';
    const call = { args, ...(stored.env ? { env: stored.env } : {}) };
    const moved = await this.records.move(row, ['pending_approval'], {
      set: {
        status: next,
        expires_at: null,
        ...(corrected ? { args_hash: argsHashOf(tool.id, args) } : {}),
        ...(next === 'running' ? { claimed_by: this.records.instanceId, attempts: 1, nowColumns: ['started_at'] } : {}),
        ...(next === 'queued' ? { nowColumns: ['queued_at'] } : {}),
      },
      events: (r) => [
        executionEvent('approved', r, { args_corrected: corrected }),
        ...(next === 'queued' ? [workItem(r)] : []),
      ],
      // The stored call goes once it is not needed (it runs now); corrected args that wait replace it.
      dropCall: next === 'running',
      ...(corrected && next !== 'running' ? { call } : {}),
    });
    if (!moved) throw await this.notPending(req.org_id, req.execution_id);
    this.log.log(`execution ${row.execution_id} approved${corrected ? ' with corrected args' : ''}: ${next}`);
    if (next !== 'running') return waitingReply(moved, args);
    // The approved call runs for the end user it was made for (the record's user_id), not the approver.
    return this.calls.runClaimed(
      moved,
      tool,
      {
        org_id: row.org_id,
        args,
        ...(row.agent_id ? { agent_id: row.agent_id } : {}),
        ...(row.user_id ? { user_id: row.user_id } : {}),
        ...(stored.env ? { env: stored.env } : {}),
        ...(row.timeout_ms ? { timeout_ms: row.timeout_ms } : {}),
      },
      started,
    );
  }

  async deny(req: RequestOf<typeof ExecutionsDeny>): Promise<ReplyOf<typeof ExecutionsDeny>> {
    const row = await this.pending(req.org_id, req.execution_id, req.user_id);
    const message = denialMessage(req.reason);
    const result: ToolExecutionResult = {
      execution_id: row.execution_id,
      status: 'error',
      func_return: message,
      stdout: [],
      stderr: [],
      sandbox_config_fingerprint: null,
      provider: '',
      duration_ms: 0,
      trace_id: row.trace_id,
      error: { code: ErrorCode.EXECUTION_DENIED, message },
    };
    const moved = await this.records.move(row, ['pending_approval'], {
      set: { status: 'denied', error_code: ErrorCode.EXECUTION_DENIED, expires_at: null, nowColumns: ['finished_at'] },
      events: (r) => [outcomeEvent(r)],
      dropCall: true,
      result,
    });
    if (!moved) throw await this.notPending(req.org_id, req.execution_id);
    this.log.log(`execution ${row.execution_id} denied`);
    return { execution: toWireRecord(moved), result };
  }

  /** The record, if it waits for approval now; one past its expiry is expired first (the sweep may not have come yet). */
  private async pending(orgId: string, executionId: string, userId: string | undefined): Promise<ExecutionRow> {
    const row = ownRecord(await this.records.get(orgId, executionId), executionId, userId);
    if (row.status === 'pending_approval' && row.expires_at && new Date(row.expires_at).getTime() <= Date.now()) {
      await this.records.expire(row);
      throw await this.notPending(orgId, executionId);
    }
    if (row.status !== 'pending_approval') throw notPendingError(row);
    return row;
  }

  private async notPending(orgId: string, executionId: string): Promise<ToolplaneError> {
    const row = await this.records.get(orgId, executionId);
    return row ? notPendingError(row) : executionNotFound(executionId);
  }
}

function notPendingError(row: ExecutionRow): ToolplaneError {
  return new ToolplaneError(
    ErrorCode.EXECUTION_NOT_PENDING,
    `Execution ${row.execution_id} is ${row.status}, not waiting for approval`,
    { execution_id: row.execution_id, status: row.status },
  );
}
