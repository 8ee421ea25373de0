import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ToolsDelete, ToolsGet, ToolsList, ToolsUpsert, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ToolsService } from './tools.service';

@Controller()
export class ToolsController {
  constructor(private readonly tools: ToolsService) {}

  @Handles(ToolsUpsert)
  upsert(@Payload() req: RequestOf<typeof ToolsUpsert>): Promise<ReplyOf<typeof ToolsUpsert>> {
    return this.tools.upsert(req);
  }

  @Handles(ToolsGet)
  get(@Payload() req: RequestOf<typeof ToolsGet>): Promise<ReplyOf<typeof ToolsGet>> {
    return this.tools.get(req);
  }

  @Handles(ToolsList)
  list(@Payload() req: RequestOf<typeof ToolsList>): Promise<ReplyOf<typeof ToolsList>> {
    return this.tools.list(req);
  }

  @Handles(ToolsDelete)
  delete(@Payload() req: RequestOf<typeof ToolsDelete>): Promise<ReplyOf<typeof ToolsDelete>> {
    return this.tools.delete(req);
  }
}
