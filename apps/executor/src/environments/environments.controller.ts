import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ToolsEnvironment, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { EnvironmentsService } from './environments.service';

@Controller()
export class EnvironmentsController {
  constructor(private readonly environments: EnvironmentsService) {}

  @Handles(ToolsEnvironment)
  environment(@Payload() req: RequestOf<typeof ToolsEnvironment>): Promise<ReplyOf<typeof ToolsEnvironment>> {
    return this.environments.environment(req);
  }
}
