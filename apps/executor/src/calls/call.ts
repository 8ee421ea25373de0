import type { Span } from '@opentelemetry/api';
import type { RequestOf, ToolsExecute } from '@toolplane/contracts';
import { inSpan } from '@toolplane/observability';

/**
 * What running a call needs beyond its tool (a tools.execute request, or a stored async/approved
 * call, rebuilt from its record: `user_id` is the record's). `user_id` picks the end user's secrets.
 */
export type CallRequest = Pick<
  RequestOf<typeof ToolsExecute>,
  'org_id' | 'args' | 'agent_id' | 'user_id' | 'env' | 'timeout_ms'
>;

/** One function per lifecycle step, one span per step. */
export function step<T>(name: string, fn: (span: Span) => Promise<T> | T): Promise<T> {
  return inSpan('executor', name, fn);
}
