import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  ToolsetsDelete,
  ToolsetsGet,
  ToolsetsList,
  ToolsetsToolsList,
  ToolsetsUpsert,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ToolsetsService } from './toolsets.service';

@Controller()
export class ToolsetsController {
  constructor(private readonly toolsets: ToolsetsService) {}

  @Handles(ToolsetsUpsert)
  upsert(@Payload() req: RequestOf<typeof ToolsetsUpsert>): Promise<ReplyOf<typeof ToolsetsUpsert>> {
    return this.toolsets.upsert(req);
  }

  @Handles(ToolsetsGet)
  get(@Payload() req: RequestOf<typeof ToolsetsGet>): Promise<ReplyOf<typeof ToolsetsGet>> {
    return this.toolsets.get(req);
  }

  @Handles(ToolsetsList)
  list(@Payload() req: RequestOf<typeof ToolsetsList>): Promise<ReplyOf<typeof ToolsetsList>> {
    return this.toolsets.list(req);
  }

  @Handles(ToolsetsDelete)
  delete(@Payload() req: RequestOf<typeof ToolsetsDelete>): Promise<ReplyOf<typeof ToolsetsDelete>> {
    return this.toolsets.delete(req);
  }

  @Handles(ToolsetsToolsList)
  tools(@Payload() req: RequestOf<typeof ToolsetsToolsList>): Promise<ReplyOf<typeof ToolsetsToolsList>> {
    return this.toolsets.tools(req);
  }
}
