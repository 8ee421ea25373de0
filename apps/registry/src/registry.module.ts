import { Module } from '@nestjs/common';
import { databaseModule } from '@toolplane/platform';
import { AgentsModule } from './agents/agents.module';
import { REGISTRY_DB } from './database/data-source';
import { ToolsModule } from './tools/tools.module';
import { ToolsetsModule } from './toolsets/toolsets.module';

@Module({ imports: [databaseModule(REGISTRY_DB), ToolsModule, AgentsModule, ToolsetsModule] })
export class RegistryModule {}
