import { Module } from '@nestjs/common';
import { databaseModule } from '@toolplane/platform';
import { EXECUTOR_DB } from './database/data-source';
import { EnvironmentsModule } from './environments/environments.module';
import { ExecutionsModule } from './executions/executions.module';

/** The executor: the execution lifecycle over its own records (Postgres schema `executor`). */
@Module({ imports: [databaseModule(EXECUTOR_DB), ExecutionsModule, EnvironmentsModule] })
export class ExecutorModule {}
