import {
  ExecutionApproved,
  ExecutionCompleted,
  ExecutionDenied,
  ExecutionExpired,
  ExecutionFailed,
  ExecutionHeld,
  type ExecutionEventPayload,
  type ExecutionRecord,
} from '@toolplane/contracts';
import type { PendingEvent } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import type { ExecutionRow } from './executions.repository';

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/** A record on the wire: metadata only (no args, no results). */
export function toWireRecord(r: ExecutionRow): ExecutionRecord {
  return {
    execution_id: r.execution_id,
    org_id: r.org_id,
    agent_id: r.agent_id,
    user_id: r.user_id ?? null,
    toolset: r.toolset ?? null,
    tool_id: r.tool_id,
    tool_name: r.tool_name,
    provider: r.provider,
    status: r.status,
    mode: r.mode,
    created_at: iso(r.created_at)!,
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    duration_ms: r.duration_ms === null ? null : Math.round(Number(r.duration_ms) * 1000) / 1000,
    error_code: r.error_code,
    trace_id: r.trace_id,
    idempotency_key: r.idempotency_key,
    batch_id: r.batch_id,
    call_id: r.call_id,
    expires_at: r.status === 'pending_approval' ? iso(r.expires_at) : null,
  };
}

type Kind = 'completed' | 'failed' | 'held' | 'approved' | 'denied' | 'expired';
const DESCRIPTORS = {
  completed: ExecutionCompleted,
  failed: ExecutionFailed,
  held: ExecutionHeld,
  approved: ExecutionApproved,
  denied: ExecutionDenied,
  expired: ExecutionExpired,
} as const;

/** The event of a record change, for the outbox (no args, no results: events are stored in the clear). */
export function executionEvent(kind: Kind, r: ExecutionRow, extra: Record<string, unknown> = {}): PendingEvent {
  const eventId = randomUUID();
  const payload: ExecutionEventPayload & Record<string, unknown> = {
    event_id: eventId,
    occurred_at: new Date().toISOString(),
    org_id: r.org_id,
    execution_id: r.execution_id,
    agent_id: r.agent_id,
    user_id: r.user_id ?? null,
    toolset: r.toolset ?? null,
    tool_id: r.tool_id,
    tool_name: r.tool_name,
    status: r.status,
    mode: r.mode,
    error_code: r.error_code,
    batch_id: r.batch_id,
    call_id: r.call_id,
    ...(kind === 'held' ? { expires_at: iso(r.expires_at) } : {}),
    ...extra,
  };
  return { descriptor: DESCRIPTORS[kind], eventId, orgId: r.org_id, payload };
}

/**
 * An execution's end user as a span attribute, by OpenTelemetry's semantic conventions
 * (`enduser.id`; none when the call named none). Spans only: an end user's id is never logged.
 */
export function endUser(userId: string | null | undefined): Record<string, string> {
  return userId ? { 'enduser.id': userId } : {};
}

/** The event a record in a final state announces. */
export function outcomeEvent(r: ExecutionRow): PendingEvent {
  const kind: Kind =
    r.status === 'succeeded'
      ? 'completed'
      : r.status === 'denied'
        ? 'denied'
        : r.status === 'expired'
          ? 'expired'
          : 'failed';
  return executionEvent(kind, r);
}
