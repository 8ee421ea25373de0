import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { LocalRunnerEnvironment, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SandboxEnvironmentsService } from './environments.service';

@Controller()
export class SandboxEnvironmentsController {
  constructor(private readonly environments: SandboxEnvironmentsService) {}

  @Handles(LocalRunnerEnvironment)
  environment(
    @Payload() req: RequestOf<typeof LocalRunnerEnvironment>,
  ): Promise<ReplyOf<typeof LocalRunnerEnvironment>> {
    return this.environments.environment(req);
  }
}
