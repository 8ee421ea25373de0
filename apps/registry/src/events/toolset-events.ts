import { ToolsetDeleted, ToolsetUpserted } from '@toolplane/contracts';
import { randomUUID } from 'node:crypto';
import type { ToolsetEntity } from '../catalog/toolset.entity';
import { toWireToolset } from '../catalog/toolset.mapper';
import type { PendingEvent } from './event-outbox';

/** The event of a toolset change, for the outbox. */
export function toolsetEvent(kind: 'upserted' | 'deleted', t: ToolsetEntity): PendingEvent {
  const eventId = randomUUID();
  const base = {
    event_id: eventId,
    occurred_at: new Date().toISOString(),
    org_id: t.orgId,
    toolset_id: t.id,
    name: t.name,
  };
  if (kind === 'deleted') return { descriptor: ToolsetDeleted, eventId, orgId: t.orgId, payload: base };
  return { descriptor: ToolsetUpserted, eventId, orgId: t.orgId, payload: { ...base, toolset: toWireToolset(t) } };
}
