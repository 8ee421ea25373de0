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
  // Unknown cause: a retry would most likely fail the same way, so never invite one.
  return { code: ErrorCode.INTERNAL, message: 'Internal error', retryable: false, trace_id: traceId };
}

export function isErrorBody(v: unknown): v is ErrorBody {
  return (
    typeof v === 'object' && v !== null && typeof (v as ErrorBody).code === 'string' &&
    typeof (v as ErrorBody).message === 'string' && typeof (v as ErrorBody).retryable === 'boolean'
  );
}
