import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  AgentToolsAttached,
  AgentToolsDetached,
  ToolCreated,
  ToolDeleted,
  ToolsetDeleted,
  ToolsetUpserted,
  ToolUpdated,
} from '@toolplane/contracts';
import { ensureEventsStream, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, TransactionalOutbox } from '@toolplane/platform';
import type { DataSource } from 'typeorm';
import type { RegistryConfig } from '../registry.config';

export type { PendingEvent } from '@toolplane/platform';

/**
 * The registry's transactional outbox (libs/platform): tool, agent tool-set and toolset events are written
 * in the transaction of their change and published after it commits (by the writer before it
 * replies, else by the relay every replica runs). After a failed publish the events stream is made
 * again if it is missing (e.g. deleted by an operator: JetStream then answers "no responders").
 */
@Injectable()
export class EventOutbox extends TransactionalOutbox {
  constructor(
    @InjectDataSource() ds: DataSource,
    messaging: MessagingClient,
    @Inject(APP_CONFIG) config: RegistryConfig,
  ) {
    super(ds, messaging, {
      table: 'registry.event_outbox',
      lockPrefix: 'registry.outbox',
      descriptors: [
        ToolCreated,
        ToolUpdated,
        ToolDeleted,
        AgentToolsAttached,
        AgentToolsDetached,
        ToolsetUpserted,
        ToolsetDeleted,
      ],
      relayEveryMs: config.REGISTRY_OUTBOX_RELAY_MS,
      relayAfterMs: config.REGISTRY_OUTBOX_RELAY_AFTER_MS,
      what: 'tool events',
      repair: () => ensureEventsStream(messaging.nc, messaging.prefix, messaging.streamReplicas),
    });
  }
}
