import { Module } from '@nestjs/common';
import { AddServer } from './add-server';
import { CompleteAuthorization } from './complete-authorization';
import { RemoveServer } from './remove-server';
import { ServerQueries } from './server-queries';
import { ServerRecords } from './server-records';
import { ServerSecretsKeeper } from './server-secrets-keeper';
import { UpdateServer } from './update-server';
import { AccountsModule } from '../accounts/accounts.module';
import { ConnectionsModule } from '../connections/connections.module';
import { SyncModule } from '../sync/sync.module';
import { OAuthAuthorizationsRepository } from '../store/oauth-authorizations.repository';
import { OAuthAuthorizationsService } from './oauth-authorizations.service';
import { ServerStoreModule } from '../store/server-store.module';
import { ServersController } from './servers.controller';

/** The servers feature, one class per use case (add, complete an authorization, update, remove, queries) over shared steps (ServerRecords). */
@Module({
  imports: [ServerStoreModule, ConnectionsModule, SyncModule, AccountsModule],
  controllers: [ServersController],
  providers: [ServerRecords, AddServer, CompleteAuthorization, UpdateServer, RemoveServer, ServerQueries, ServerSecretsKeeper, OAuthAuthorizationsService, OAuthAuthorizationsRepository],
})
export class ServersModule {}
