import { ErrorCode, ToolplaneError, type ErrorBody } from '@toolplane/contracts';

/** The one place an exception becomes the wire error. Unknown errors say nothing of themselves. */
export function toErrorBody(err: unknown, traceId: string): ErrorBody {
  if (err instanceof ToolplaneError) {
    return {
      code: err.code,
      message: err.message,
      retryable: err.retryable,
      ...(err.details ? { details: err.details } : {}),
      trace_id: traceId,
    };
  }
  // A dependency that is down (Postgres restarting, a refused or dropped connection): transient, say so.
  if (isDependencyDown(err))
    return {
      code: ErrorCode.SERVICE_UNAVAILABLE,
      message: 'A dependency of the service is unavailable: retry later',
      retryable: true,
      trace_id: traceId,
    };
  // Unknown cause: a retry would most likely fail the same way, so never invite one.
  return { code: ErrorCode.INTERNAL, message: 'Internal error', retryable: false, trace_id: traceId };
}

export function isErrorBody(v: unknown): v is ErrorBody {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as ErrorBody).code === 'string' &&
    typeof (v as ErrorBody).message === 'string' &&
    typeof (v as ErrorBody).retryable === 'boolean'
  );
}

/** Network errors of a connection to a dependency, and SQLSTATEs of a database going away or not accepting connections yet. */
const DEPENDENCY_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
]);
const DEPENDENCY_DOWN_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)/;

/** The error says a dependency (the database, another connection) is down, not that the request was wrong. */
export function isDependencyDown(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? '');
  return DEPENDENCY_DOWN_CODES.has(code) || code.startsWith('08') || DEPENDENCY_DOWN_MESSAGES.test(err.message);
}
