import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { SyncModule } from '../sync/sync.module';
import { OAuthAuthorizationsRepository } from './oauth-authorizations.repository';
import { OAuthAuthorizationsService } from './oauth-authorizations.service';
import { ServerStoreModule } from './server-store.module';
import { ServersController } from './servers.controller';
import { ServersService } from './servers.service';

@Module({ imports: [ServerStoreModule, ConnectionsModule, SyncModule], controllers: [ServersController], providers: [ServersService, OAuthAuthorizationsService, OAuthAuthorizationsRepository] })
export class ServersModule {}
