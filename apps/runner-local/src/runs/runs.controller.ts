import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { LocalRunnerRun, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { RunsService } from './runs.service';

@Controller()
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Handles(LocalRunnerRun)
  run(@Payload() req: RequestOf<typeof LocalRunnerRun>): Promise<ReplyOf<typeof LocalRunnerRun>> {
    return this.runs.run(req);
  }
}
