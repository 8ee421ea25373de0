import { Module } from '@nestjs/common';
import { WebToolsClient } from '../builtins/builtin-calls';
import { RecordsModule } from '../records/records.module';
import { ApprovalPolicy } from './approval-policy';
import { ApprovalsService } from './approvals.service';
import { ArgumentsService } from './arguments.service';
import { AsyncRuns } from './async-runs.service';
import { CallLifecycle } from './call-lifecycle.service';
import { ClientResultsService } from './client-results.service';
import { CredentialsClient } from './credentials.client';
import { ExecutionQueries } from './execution-queries.service';
import { ExecutionRecordsController } from './execution-records.controller';
import { ExecutionsController } from './executions.controller';
import { ExecutionsService } from './executions.service';
import { ToolCatalogService } from './tool-catalog.service';
import { ToolRunner } from './tool-runner';

@Module({
  imports: [RecordsModule],
  controllers: [ExecutionsController, ExecutionRecordsController],
  providers: [
    ExecutionsService,
    ToolCatalogService,
    ArgumentsService,
    CredentialsClient,
    ToolRunner,
    WebToolsClient,
    CallLifecycle,
    ApprovalPolicy,
    ApprovalsService,
    ClientResultsService,
    ExecutionQueries,
    AsyncRuns,
  ],
  exports: [CredentialsClient, ToolCatalogService],
})
export class ExecutionsModule {}
