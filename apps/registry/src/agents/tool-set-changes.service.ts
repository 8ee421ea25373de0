import { Injectable } from '@nestjs/common';
import type { AgentToolDetachment } from '@toolplane/contracts';
import { detachedEvents, type DetachCause } from '../events/agent-tool-events';
import { EventOutbox } from '../events/event-outbox';
import { AgentToolsRepository, type Transaction } from './agent-tools.repository';
import { ToolDefinitionsService } from './tool-definitions.service';

/**
 * What a change to tools means for agent tool sets, for the writers of tools (upsert, delete,
 * external sources): removed tools are detached from every agent in the same transaction (with
 * their events), and this replica's model-ready definitions are dropped before the writer replies
 * (the other replicas drop theirs when the events reach them).
 */
@Injectable()
export class ToolSetChanges {
  constructor(
    private readonly attachments: AgentToolsRepository,
    private readonly outbox: EventOutbox,
    private readonly definitions: ToolDefinitionsService,
  ) {}

  /** Inside the removal's transaction, before the tools go: detaches them everywhere and stages one event per agent. */
  async detachRemoved(
    m: Transaction,
    orgId: string,
    toolIds: string[],
    cause: DetachCause,
  ): Promise<AgentToolDetachment[]> {
    const detached = await this.attachments.detachTools(m, orgId, toolIds);
    await this.outbox.stage(m, detachedEvents(orgId, detached, cause));
    return detached;
  }

  /** After the commit: tools of the org changed or went (definitions that hold them are stale here now). */
  toolsChanged(orgId: string): void {
    this.definitions.forget(orgId);
  }
}
