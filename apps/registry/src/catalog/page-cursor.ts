import { ErrorCode, ToolplaneError } from '@toolplane/contracts';

/** The opaque cursor of a page ordered by a bigint `seq`: the last seq of the previous page. */
export function encodeCursor(seq: string): string {
  return Buffer.from(`s:${seq}`).toString('base64url');
}

/** The seq a cursor of encodeCursor carries, or CONTRACT_VIOLATION. */
export function decodeCursor(cursor: string): string {
  const raw = Buffer.from(cursor, 'base64url').toString();
  const m = /^s:(\d{1,19})$/.exec(raw);
  if (!m)
    throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'cursor is not a cursor this service issued', {
      issues: [{ path: 'cursor', message: 'invalid' }],
    });
  return m[1]!;
}
