import { Module, type OnApplicationBootstrap } from '@nestjs/common';
import { ensureEventsStream, MessagingClient } from '@toolplane/messaging';
import { AgentsModule } from '../agents/agents.module';
import { BuiltinsModule } from '../builtins/builtins.module';
import { EventsModule } from '../events/events.module';
import { ExternalToolPagesRepository } from './external-tool-pages.repository';
import { ExternalToolsController } from './external-tools.controller';
import { ExternalToolsService } from './external-tools.service';
import { ToolsController } from './tools.controller';
import { ToolsRepository } from './tools.repository';
import { ToolsService } from './tools.service';

@Module({
  imports: [EventsModule, AgentsModule, BuiltinsModule],
  controllers: [ToolsController, ExternalToolsController],
  providers: [ToolsService, ToolsRepository, ExternalToolsService, ExternalToolPagesRepository],
})
export class ToolsModule implements OnApplicationBootstrap {
  constructor(private readonly messaging: MessagingClient) {}

  /** Tool events need their stream before the first write. */
  async onApplicationBootstrap(): Promise<void> {
    await ensureEventsStream(this.messaging.nc, this.messaging.prefix, this.messaging.streamReplicas);
  }
}
