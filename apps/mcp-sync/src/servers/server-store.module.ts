import { Module } from '@nestjs/common';
import { ORG_SECRET_SOURCE, UnwiredSecretSource } from './templates';
import { SecretSealer } from './secret-sealer';
import { ServerTargets } from './server-targets';
import { ServersRepository } from './servers.repository';

/** Server records and their sealed secrets, shared by the servers, sync and calls features. */
@Module({
  providers: [ServersRepository, SecretSealer, ServerTargets, { provide: ORG_SECRET_SOURCE, useClass: UnwiredSecretSource }],
  exports: [ServersRepository, SecretSealer, ServerTargets, ORG_SECRET_SOURCE],
})
export class ServerStoreModule {}
