import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';

/**
 * Runs `fn` in a new active span of `tracer` (a service's tracer name) and ends it. A throw marks the
 * span as an error with the error's `code` when it has one (a ToolplaneError's), else "error": never
 * its message, which may carry values. Attributes are ids and sizes, never a secret.
 */
export function inSpan<T>(
  tracer: string,
  name: string,
  fn: (span: Span) => Promise<T> | T,
  attributes?: Record<string, string | number | boolean>,
): Promise<T> {
  return trace.getTracer(tracer).startActiveSpan(name, attributes ? { attributes } : {}, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      const code = (e as { code?: unknown } | null)?.code;
      span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : 'error' });
      throw e;
    } finally {
      span.end();
    }
  });
}
