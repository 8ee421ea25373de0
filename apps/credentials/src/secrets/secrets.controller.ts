import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { SecretsDelete, SecretsList, SecretsSet, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SecretsService } from './secrets.service';

@Controller()
export class SecretsController {
  constructor(private readonly secrets: SecretsService) {}

  @Handles(SecretsSet)
  set(@Payload() req: RequestOf<typeof SecretsSet>): Promise<ReplyOf<typeof SecretsSet>> {
    return this.secrets.set(req);
  }

  @Handles(SecretsList)
  list(@Payload() req: RequestOf<typeof SecretsList>): Promise<ReplyOf<typeof SecretsList>> {
    return this.secrets.list(req);
  }

  @Handles(SecretsDelete)
  delete(@Payload() req: RequestOf<typeof SecretsDelete>): Promise<ReplyOf<typeof SecretsDelete>> {
    return this.secrets.delete(req);
  }
}
