import { Module } from '@nestjs/common';
import { CredentialsSecretSource } from './org-secrets.client';
import { ORG_SECRET_SOURCE } from './templates';
import { SecretSealer } from './secret-sealer';
import { ServersRepository } from './servers.repository';

/** Server records and their sealed secrets, shared by the servers, sync and calls features. */
@Module({
  providers: [ServersRepository, SecretSealer, { provide: ORG_SECRET_SOURCE, useClass: CredentialsSecretSource }],
  exports: [ServersRepository, SecretSealer, ORG_SECRET_SOURCE],
})
export class ServerStoreModule {}
