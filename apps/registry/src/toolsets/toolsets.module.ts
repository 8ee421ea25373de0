import { Module } from '@nestjs/common';
import { BuiltinsModule } from '../builtins/builtins.module';
import { EventsModule } from '../events/events.module';
import { ToolsetsController } from './toolsets.controller';
import { ToolsetsRepository } from './toolsets.repository';
import { ToolsetsService } from './toolsets.service';

/** Published tool sets (what the MCP gateway serves at /mcp/toolsets/<name>): definitions here, members resolved from the tools on each read. */
@Module({
  imports: [EventsModule, BuiltinsModule],
  controllers: [ToolsetsController],
  providers: [ToolsetsService, ToolsetsRepository],
})
export class ToolsetsModule {}
