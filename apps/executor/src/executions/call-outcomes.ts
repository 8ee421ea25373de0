import type { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type ExecuteReply, type ToolExecutionResult } from '@toolplane/contracts';
import type { ExecutionRow } from '../records/records.service';

/** What a call waiting for someone answers: for approval (with its args) or for its client; else its state. */
export function waitingReply(row: ExecutionRow, args: Record<string, unknown>): ExecuteReply {
  if (row.status === 'pending_approval') {
    return {
      status: 'pending_approval',
      execution_id: row.execution_id,
      tool_id: row.tool_id!,
      tool_name: row.tool_name ?? '',
      args,
      expires_at: new Date(row.expires_at!).toISOString(),
    };
  }
  if (row.status === 'awaiting_client')
    return {
      status: 'awaiting_client',
      execution_id: row.execution_id,
      tool_id: row.tool_id!,
      tool_name: row.tool_name ?? '',
      args,
    };
  return { execution_id: row.execution_id, status: row.status as 'queued' };
}

/** A call that ended in an envelope error, as the result its record keeps. */
export function errorResult(
  executionId: string,
  err: ToolplaneError,
  started: number,
  traceId: string,
): ToolExecutionResult {
  return {
    execution_id: executionId,
    status: 'error',
    func_return: null,
    stdout: [],
    stderr: [],
    sandbox_config_fingerprint: null,
    provider: '',
    duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
    trace_id: traceId,
    error: { code: err.code, message: err.message },
  };
}

export function asToolplaneError(e: unknown, log: Logger): ToolplaneError {
  if (e instanceof ToolplaneError) return e;
  log.error(`execution failed inside the executor: ${(e as Error)?.stack ?? String(e)}`);
  return new ToolplaneError(ErrorCode.INTERNAL, 'The call failed inside the executor', undefined, { cause: e });
}

/** The error, naming the call's execution in its details (the record says how it ended). */
export function withExecutionId(err: ToolplaneError, executionId: string): ToolplaneError {
  const out = new ToolplaneError(
    err.code,
    err.message,
    { ...err.details, execution_id: executionId },
    { retryable: err.retryable, cause: err },
  );
  out.trace_id = err.trace_id;
  return out;
}
