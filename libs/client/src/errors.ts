import { NoRespondersError, TimeoutError } from '@nats-io/transport-node';
import { ToolplaneErrorBase, type ErrorBody } from '@toolplane/contracts';

/** Codes the client makes itself (the service never answered, or the call never left). */
export const ClientErrorCode = {
  /** The call was aborted by its AbortSignal. */
  ABORTED: 'ABORTED',
  /** No service is subscribed to the subject (not deployed, or a wrong prefix). */
  NO_RESPONDERS: 'NO_RESPONDERS',
  /** No reply within the call's timeout. The call may still run. */
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  /** The request does not match the contract: it was not sent. */
  CONTRACT_VIOLATION: 'CONTRACT_VIOLATION',
  /** A reply that is neither the contract's reply nor an error envelope. */
  MALFORMED_REPLY: 'MALFORMED_REPLY',
} as const;

/**
 * A failed Toolplane call: the service's error envelope (`code`, `message`, `retryable`,
 * `details`, `trace_id`), or one of `ClientErrorCode` when no envelope came back. The same
 * definition as the services' error (`ToolplaneErrorBase` in the contracts: the envelope's field
 * names and an ES2022 `cause`), plus the `subject` that was called; `trace_id` is `''` when no
 * trace id is known.
 */
export class ToolplaneError extends ToolplaneErrorBase<string> {
  declare readonly trace_id: string;
  readonly subject: string;

  constructor(
    init: {
      code: string;
      message: string;
      retryable: boolean;
      details?: Record<string, unknown>;
      trace_id?: string;
      subject: string;
    },
    options?: { cause?: unknown },
  ) {
    super(
      {
        code: init.code,
        message: init.message,
        retryable: init.retryable,
        details: init.details,
        trace_id: init.trace_id ?? '',
      },
      options,
    );
    this.subject = init.subject;
  }

  static fromEnvelope(subject: string, body: ErrorBody): ToolplaneError {
    return new ToolplaneError({ ...body, subject });
  }

  /** A transport failure of one attempt (no responders and timeouts may be retried; the rest not). */
  static fromTransport(subject: string, e: unknown, traceId: string): ToolplaneError {
    const err = e as { cause?: unknown; message?: string };
    if (
      e instanceof NoRespondersError ||
      err?.cause instanceof NoRespondersError ||
      /no responders/i.test(err?.message ?? '')
    ) {
      return new ToolplaneError(
        {
          code: ClientErrorCode.NO_RESPONDERS,
          message: `no service answers ${subject}`,
          retryable: true,
          trace_id: traceId,
          subject,
        },
        { cause: e },
      );
    }
    if (e instanceof TimeoutError || err?.cause instanceof TimeoutError || /timeout/i.test(err?.message ?? '')) {
      return new ToolplaneError(
        {
          code: ClientErrorCode.REQUEST_TIMEOUT,
          message: `no reply to ${subject} in time`,
          retryable: true,
          trace_id: traceId,
          subject,
        },
        { cause: e },
      );
    }
    return new ToolplaneError(
      { code: 'TRANSPORT_FAILED', message: err?.message ?? String(e), retryable: false, trace_id: traceId, subject },
      { cause: e },
    );
  }
}

export function isToolplaneError(e: unknown, code?: string): e is ToolplaneError {
  return e instanceof ToolplaneError && (code === undefined || e.code === code);
}
