import { Module } from '@nestjs/common';
import { BuiltinsModule } from '../builtins/builtins.module';
import { EventsModule } from '../events/events.module';
import { AgentToolsRepository } from './agent-tools.repository';
import { AgentToolsService } from './agent-tools.service';
import { AgentsController } from './agents.controller';
import { SchemaChecksService } from './schema-checks.service';
import { ToolDefinitionsService } from './tool-definitions.service';
import { ToolSetChanges } from './tool-set-changes.service';

/** Agent tool sets and their model-ready definitions; ToolSetChanges is what the tool writers need of them. */
@Module({
  imports: [EventsModule, BuiltinsModule],
  controllers: [AgentsController],
  providers: [AgentToolsRepository, AgentToolsService, SchemaChecksService, ToolDefinitionsService, ToolSetChanges],
  exports: [ToolSetChanges],
})
export class AgentsModule {}
