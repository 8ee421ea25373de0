import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { OrgSecretsResolve, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { OrgSecretsService } from './org-secrets.service';

/** Internal: secret values for other services' `{{VAR}}` templates (mcp-sync), user over agent over org. */
@Controller()
export class OrgSecretsController {
  constructor(private readonly secrets: OrgSecretsService) {}

  @Handles(OrgSecretsResolve)
  resolve(@Payload() req: RequestOf<typeof OrgSecretsResolve>): Promise<ReplyOf<typeof OrgSecretsResolve>> {
    return this.secrets.resolve(req);
  }
}
