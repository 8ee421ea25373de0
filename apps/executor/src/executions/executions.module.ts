import { Module } from '@nestjs/common';
import { ArgumentsService } from './arguments.service';
import { CredentialsClient } from './credentials.client';
import { ExecutionsController } from './executions.controller';
import { ExecutionsService } from './executions.service';
import { ToolCatalogService } from './tool-catalog.service';

@Module({ controllers: [ExecutionsController], providers: [ExecutionsService, ToolCatalogService, ArgumentsService, CredentialsClient] })
export class ExecutionsModule {}
