import { Injectable, Logger } from '@nestjs/common';
import {
  DEFAULT_RETURN_CHAR_LIMIT,
  ErrorCode,
  ToolplaneError,
  type ExecutionsSubmitResult,
  type ReplyOf,
  type RequestOf,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { outcomeEvent, toWireRecord } from '../records/record.mapper';
import { ExecutionRecords, finalStateOf, type ExecutionRow } from '../records/records.service';
import { executionNotFound, ownRecord } from './own-record';
import { truncateReturn } from './return-value';
import { ToolCatalogService } from './tool-catalog.service';

/**
 * The outcome of a client-side tool call, reported by the runtime that ran it: the record in
 * awaiting_client completes with it, once (a second report is EXECUTION_ALREADY_COMPLETED). The
 * return value is cut to the tool's return_char_limit like any other.
 */
@Injectable()
export class ClientResultsService {
  private readonly log = new Logger(ClientResultsService.name);

  constructor(
    private readonly records: ExecutionRecords,
    private readonly catalog: ToolCatalogService,
  ) {}

  async submit(req: RequestOf<typeof ExecutionsSubmitResult>): Promise<ReplyOf<typeof ExecutionsSubmitResult>> {
    const row = ownRecord(await this.records.get(req.org_id, req.execution_id), req.execution_id, req.user_id);
    if (row.status !== 'awaiting_client') throw alreadyCompleted(row);
    const limit = await this.catalog
      .find(req.org_id, { id: row.tool_id! })
      .then((f) => f.tool.return_char_limit)
      .catch(() => DEFAULT_RETURN_CHAR_LIMIT);
    const result: ToolExecutionResult = {
      execution_id: row.execution_id,
      status: req.status,
      func_return: truncateReturn(req.func_return, limit),
      stdout: req.stdout ?? [],
      stderr: req.stderr ?? [],
      sandbox_config_fingerprint: null,
      provider: 'client',
      duration_ms: Math.round((Date.now() - new Date(row.started_at ?? row.created_at).getTime()) * 1000) / 1000,
      trace_id: row.trace_id,
      ...(req.status === 'error'
        ? { error: { code: ErrorCode.TOOL_EXCEPTION, message: clientError(req.func_return) } }
        : {}),
    };
    const moved = await this.records.move(row, ['awaiting_client'], {
      set: {
        status: finalStateOf(result),
        provider: 'client',
        error_code: result.error?.code ?? null,
        duration_ms: result.duration_ms,
        nowColumns: ['finished_at'],
      },
      events: (r) => [outcomeEvent(r)],
      dropCall: true,
      result,
    });
    if (!moved) {
      const now = await this.records.get(req.org_id, req.execution_id);
      throw now ? alreadyCompleted(now) : executionNotFound(req.execution_id);
    }
    this.log.log(`execution ${row.execution_id} completed by its client (${req.status})`);
    return { execution: toWireRecord(moved), result };
  }
}

function alreadyCompleted(row: ExecutionRow): ToolplaneError {
  return new ToolplaneError(
    ErrorCode.EXECUTION_ALREADY_COMPLETED,
    `Execution ${row.execution_id} is ${row.status}: it is not waiting for its client's result`,
    {
      execution_id: row.execution_id,
      status: row.status,
    },
  );
}

/** The error message of a client-reported failure: its return value as text, cut short. */
function clientError(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'the client reported an error');
  return text.slice(0, 2000);
}
