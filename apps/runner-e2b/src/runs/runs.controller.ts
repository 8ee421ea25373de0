import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { E2bRunnerEnvironment, E2bRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { RunsService } from './runs.service';

@Controller()
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Handles(E2bRunnerRun)
  run(@Payload() req: RequestOf<typeof E2bRunnerRun>): Promise<ReplyOf<typeof E2bRunnerRun>> {
    return this.runs.run(req);
  }

  @Handles(E2bRunnerEnvironment)
  environment(@Payload() req: RequestOf<typeof E2bRunnerEnvironment>): ReplyOf<typeof E2bRunnerEnvironment> {
    return this.runs.environment(req);
  }
}
