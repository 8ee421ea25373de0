import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { OrgSecretsResolve, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SecretsService } from '../secrets/secrets.service';

/** Internal: org-wide secret values for other services' `{{VAR}}` templates (mcp-sync). */
@Controller()
export class OrgSecretsController {
  constructor(private readonly secrets: SecretsService) {}

  @Handles(OrgSecretsResolve)
  resolve(@Payload() req: RequestOf<typeof OrgSecretsResolve>): Promise<ReplyOf<typeof OrgSecretsResolve>> {
    return this.secrets.orgValues(req.org_id, req.names);
  }
}
