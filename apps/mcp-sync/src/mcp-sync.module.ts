import { Module, type OnApplicationBootstrap } from '@nestjs/common';
import { ensureEventsStream, MessagingClient } from '@toolplane/messaging';
import { databaseModule } from '@toolplane/platform';
import { CallsModule } from './calls/calls.module';
import { MCP_DB } from './database/data-source';
import { ServersModule } from './servers/servers.module';

@Module({ imports: [databaseModule(MCP_DB), ServersModule, CallsModule] })
export class McpSyncModule implements OnApplicationBootstrap {
  constructor(private readonly messaging: MessagingClient) {}

  /** Sync events need their stream before the first sync. */
  async onApplicationBootstrap(): Promise<void> {
    await ensureEventsStream(this.messaging.nc, this.messaging.prefix, this.messaging.streamReplicas);
  }
}
