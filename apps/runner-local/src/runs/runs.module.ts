import { Module } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { ProcessDriver } from '@toolplane/sandbox';
import type { RunnerConfig } from '../runner-local.config';
import { RunsController } from './runs.controller';
import { RunsService, SANDBOX_DRIVER } from './runs.service';

@Module({
  controllers: [RunsController],
  providers: [
    RunsService,
    {
      provide: SANDBOX_DRIVER,
      inject: [APP_CONFIG],
      useFactory: (c: RunnerConfig) =>
        new ProcessDriver({ pythonPath: c.RUNNER_PYTHON, workRoot: c.RUNNER_WORK_ROOT, runAsUid: c.RUNNER_RUN_AS_UID, runAsGid: c.RUNNER_RUN_AS_GID }),
    },
  ],
})
export class RunsModule {}
