import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ModalRunnerEnvironment, ModalRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { RunsService } from './runs.service';

@Controller()
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Handles(ModalRunnerRun)
  run(@Payload() req: RequestOf<typeof ModalRunnerRun>): Promise<ReplyOf<typeof ModalRunnerRun>> {
    return this.runs.run(req);
  }

  @Handles(ModalRunnerEnvironment)
  environment(@Payload() req: RequestOf<typeof ModalRunnerEnvironment>): ReplyOf<typeof ModalRunnerEnvironment> {
    return this.runs.environment(req);
  }
}
