import { ToolCreated, ToolDeleted, ToolUpdated } from '@toolplane/contracts';
import { randomUUID } from 'node:crypto';
import type { ToolEntity } from '../catalog/tool.entity';
import { toWireTool } from '../catalog/tool.mapper';
import type { PendingEvent } from './event-outbox';

/** The event of a tool change, for the outbox. */
export function toolEvent(kind: 'created' | 'updated' | 'deleted', t: ToolEntity): PendingEvent {
  const eventId = randomUUID();
  const base = {
    event_id: eventId,
    occurred_at: new Date().toISOString(),
    org_id: t.orgId,
    tool_id: t.id,
    tool_name: t.name,
  };
  if (kind === 'deleted') return { descriptor: ToolDeleted, eventId, orgId: t.orgId, payload: base };
  return {
    descriptor: kind === 'created' ? ToolCreated : ToolUpdated,
    eventId,
    orgId: t.orgId,
    payload: { ...base, tool: toWireTool(t) },
  };
}
