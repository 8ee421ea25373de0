import { Module } from '@nestjs/common';
import { CredentialsSecretSource } from './org-secrets.client';
import { ORG_SECRET_SOURCE } from './templates';
import { SecretSealer } from './secret-sealer';
import { ServersRepository } from './servers.repository';

/** The store every feature of mcp-sync stands on: server records, their sealed secrets and the org-secrets source. */
@Module({
  providers: [ServersRepository, SecretSealer, { provide: ORG_SECRET_SOURCE, useClass: CredentialsSecretSource }],
  exports: [ServersRepository, SecretSealer, ORG_SECRET_SOURCE],
})
export class StoreModule {}
