import { AgentToolsAttached, AgentToolsDetached, type AgentToolDetachment, type EventOf } from '@toolplane/contracts';
import { randomUUID } from 'node:crypto';
import type { PendingEvent } from './event-outbox';

type AttachedTools = EventOf<typeof AgentToolsAttached>['tools'];
export type DetachCause = EventOf<typeof AgentToolsDetached>['cause'];

/** The event of tools attached to an agent (or its settings for them changed), for the outbox. */
export function attachedEvent(orgId: string, agentId: string, tools: AttachedTools): PendingEvent {
  const eventId = randomUUID();
  return {
    descriptor: AgentToolsAttached,
    eventId,
    orgId,
    payload: { event_id: eventId, occurred_at: new Date().toISOString(), org_id: orgId, agent_id: agentId, tools },
  };
}

/** One detached event per agent that lost tools. */
export function detachedEvents(orgId: string, detachments: AgentToolDetachment[], cause: DetachCause): PendingEvent[] {
  const byAgent = new Map<string, Array<{ tool_id: string; tool_name: string }>>();
  for (const d of detachments) {
    const tools = byAgent.get(d.agent_id) ?? [];
    tools.push({ tool_id: d.tool_id, tool_name: d.name });
    byAgent.set(d.agent_id, tools);
  }
  const occurredAt = new Date().toISOString();
  return [...byAgent].map(([agentId, tools]) => {
    const eventId = randomUUID();
    return {
      descriptor: AgentToolsDetached,
      eventId,
      orgId,
      payload: { event_id: eventId, occurred_at: occurredAt, org_id: orgId, agent_id: agentId, tools, cause },
    };
  });
}
