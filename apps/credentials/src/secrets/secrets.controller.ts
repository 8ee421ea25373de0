import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { SecretsDelete, SecretsList, SecretsSet, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { CredentialsCache } from '../cache/credentials-cache';
import { SecretsService } from './secrets.service';

@Controller()
export class SecretsController {
  constructor(
    private readonly secrets: SecretsService,
    private readonly cache: CredentialsCache,
  ) {}

  @Handles(SecretsSet)
  async set(@Payload() req: RequestOf<typeof SecretsSet>): Promise<ReplyOf<typeof SecretsSet>> {
    // Evict before and after: a resolve that overlaps the write cannot keep the old value cached.
    this.cache.invalidate(req.org_id);
    try {
      return await this.secrets.set(req);
    } finally {
      this.cache.invalidate(req.org_id);
    }
  }

  @Handles(SecretsList)
  list(@Payload() req: RequestOf<typeof SecretsList>): Promise<ReplyOf<typeof SecretsList>> {
    return this.secrets.list(req);
  }

  @Handles(SecretsDelete)
  async delete(@Payload() req: RequestOf<typeof SecretsDelete>): Promise<ReplyOf<typeof SecretsDelete>> {
    try {
      return await this.secrets.delete(req);
    } finally {
      this.cache.invalidate(req.org_id);
    }
  }
}
