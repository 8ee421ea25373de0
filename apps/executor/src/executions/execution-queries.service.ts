import { Injectable } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type ExecutionsGet,
  type ExecutionsList,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { currentRequestDeadline } from '@toolplane/messaging';
import { toWireRecord } from '../records/record.mapper';
import { ExecutionRecords, type ExecutionRow } from '../records/records.service';
import { ownRecord } from './own-record';

/** Time kept, between a get's wait for a record on its way and the caller's deadline, to answer. */
const REPLY_ROOM_MS = 250;

/** executions.get / .list: records of the caller's org only (another org's id is EXECUTION_NOT_FOUND). */
@Injectable()
export class ExecutionQueries {
  constructor(private readonly records: ExecutionRecords) {}

  async get(req: RequestOf<typeof ExecutionsGet>): Promise<ReplyOf<typeof ExecutionsGet>> {
    // Read your writes: an id just handed out is answered with its record, even one still being
    // written behind its call (by whichever replica ran it); the reply leaves room to be sent.
    const deadline = (currentRequestDeadline() ?? Infinity) - REPLY_ROOM_MS;
    const row = ownRecord(
      await this.records.getWritten(req.org_id, req.execution_id, deadline),
      req.execution_id,
      req.user_id,
    );
    const waiting = row.status === 'pending_approval' || row.status === 'queued' || row.status === 'awaiting_client';
    const [call, result] = await Promise.all([waiting ? this.records.callOf(row) : null, this.records.resultOf(row)]);
    return { execution: toWireRecord(row), args: call?.args ?? null, result };
  }

  async list(req: RequestOf<typeof ExecutionsList>): Promise<ReplyOf<typeof ExecutionsList>> {
    const rows = await this.records.list({
      orgId: req.org_id,
      agentId: req.agent_id,
      userId: req.user_id,
      toolset: req.toolset,
      toolId: req.tool_id,
      status: req.status,
      before: req.cursor ? decodeCursor(req.cursor) : undefined,
      limit: req.limit + 1,
    });
    const page = rows.slice(0, req.limit);
    return {
      executions: page.map(toWireRecord),
      next_cursor: rows.length > req.limit ? encodeCursor(page[page.length - 1]!) : null,
    };
  }
}

function encodeCursor(r: ExecutionRow): string {
  return Buffer.from(`e:${new Date(r.created_at).toISOString()}|${r.execution_id}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; executionId: string } {
  const m = /^e:(\d{4}-\d{2}-\d{2}T[\d:.]+Z)\|(exec-[0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m)
    throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'cursor is not a cursor this service issued', {
      issues: [{ path: 'cursor', message: 'invalid' }],
    });
  return { createdAt: m[1]!, executionId: m[2]! };
}
