import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { SyncModule } from '../sync/sync.module';
import { ServerStoreModule } from './server-store.module';
import { ServersController } from './servers.controller';
import { ServersService } from './servers.service';

@Module({ imports: [ServerStoreModule, ConnectionsModule, SyncModule], controllers: [ServersController], providers: [ServersService] })
export class ServersModule {}
