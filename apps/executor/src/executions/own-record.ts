import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import type { ExecutionRow } from '../records/records.service';

/**
 * The record as a request may see it: a request naming an end user (or made with a token bound to
 * one) sees only that user's executions — another user's is not found, as another org's is.
 */
export function ownRecord(
  row: ExecutionRow | undefined | null,
  executionId: string,
  userId: string | undefined,
): ExecutionRow {
  if (!row || (userId !== undefined && row.user_id !== userId)) throw executionNotFound(executionId);
  return row;
}

export function executionNotFound(executionId: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.EXECUTION_NOT_FOUND, `No execution ${executionId} in this org`, {
    execution_id: executionId,
  });
}
