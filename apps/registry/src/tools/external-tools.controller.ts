import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ExternalToolsStage, ExternalToolsSync, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ExternalToolsService } from './external-tools.service';

/** Internal: external sources (mcp-sync) write their tool sets here. */
@Controller()
export class ExternalToolsController {
  constructor(private readonly external: ExternalToolsService) {}

  @Handles(ExternalToolsSync)
  sync(@Payload() req: RequestOf<typeof ExternalToolsSync>): Promise<ReplyOf<typeof ExternalToolsSync>> {
    return this.external.sync(req);
  }

  @Handles(ExternalToolsStage)
  stage(@Payload() req: RequestOf<typeof ExternalToolsStage>): Promise<ReplyOf<typeof ExternalToolsStage>> {
    return this.external.stage(req);
  }
}
