import { Module } from '@nestjs/common';
import { AddServer } from './add-server';
import { CompleteAuthorization } from './complete-authorization';
import { RemoveServer } from './remove-server';
import { ServerQueries } from './server-queries';
import { ServerSteps } from './server-steps';
import { ServerSecretsKeeper } from './server-secrets-keeper';
import { UpdateServer } from './update-server';
import { AccountsModule } from '../accounts/accounts.module';
import { ConnectionsModule } from '../connections/connections.module';
import { SyncModule } from '../sync/sync.module';
import { OAuthAuthorizationsRepository } from '../store/oauth-authorizations.repository';
import { AuthorizationCodeFlow } from './authorization-code-flow';
import { StoreModule } from '../store/store.module';
import { ServersController } from './servers.controller';

/** The servers feature, one class per use case (add, complete an authorization, update, remove, queries) over shared steps (ServerSteps). */
@Module({
  imports: [StoreModule, ConnectionsModule, SyncModule, AccountsModule],
  controllers: [ServersController],
  providers: [
    ServerSteps,
    AddServer,
    CompleteAuthorization,
    UpdateServer,
    RemoveServer,
    ServerQueries,
    ServerSecretsKeeper,
    AuthorizationCodeFlow,
    OAuthAuthorizationsRepository,
  ],
})
export class ServersModule {}
