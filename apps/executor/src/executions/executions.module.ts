import { Module } from '@nestjs/common';
import { ArgumentsService } from './arguments.service';
import { ExecutionsController } from './executions.controller';
import { ExecutionsService } from './executions.service';
import { ToolCatalogService } from './tool-catalog.service';

@Module({ controllers: [ExecutionsController], providers: [ExecutionsService, ToolCatalogService, ArgumentsService] })
export class ExecutionsModule {}
