import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { McpToolsCall, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { CallsService } from './calls.service';

/** Internal: the executor's external_mcp calls. */
@Controller()
export class CallsController {
  constructor(private readonly calls: CallsService) {}

  @Handles(McpToolsCall)
  call(@Payload() req: RequestOf<typeof McpToolsCall>): Promise<ReplyOf<typeof McpToolsCall>> {
    return this.calls.call(req);
  }
}
