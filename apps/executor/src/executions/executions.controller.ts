import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ToolsExecute, ToolsExecuteBatch, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ExecutionsService } from './executions.service';

@Controller()
export class ExecutionsController {
  constructor(private readonly executions: ExecutionsService) {}

  @Handles(ToolsExecute)
  execute(@Payload() req: RequestOf<typeof ToolsExecute>): Promise<ReplyOf<typeof ToolsExecute>> {
    return this.executions.execute(req);
  }

  @Handles(ToolsExecuteBatch)
  executeBatch(@Payload() req: RequestOf<typeof ToolsExecuteBatch>): Promise<ReplyOf<typeof ToolsExecuteBatch>> {
    return this.executions.executeBatch(req);
  }
}
