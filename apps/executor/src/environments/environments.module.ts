import { Module } from '@nestjs/common';
import { ExecutionsModule } from '../executions/executions.module';
import { EnvironmentsController } from './environments.controller';
import { EnvironmentsService } from './environments.service';

/** Tools' environments (toolplane.v1.tools.environment, and builds started on upsert), on the executions' tool catalog and credentials. */
@Module({
  imports: [ExecutionsModule],
  controllers: [EnvironmentsController],
  providers: [EnvironmentsService],
})
export class EnvironmentsModule {}
