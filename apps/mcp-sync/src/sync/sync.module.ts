import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { ServerStoreModule } from '../store/server-store.module';
import { SyncScheduler } from './sync.scheduler';
import { SyncService } from './sync.service';

@Module({ imports: [ServerStoreModule, ConnectionsModule], providers: [SyncService, SyncScheduler], exports: [SyncService, SyncScheduler] })
export class SyncModule {}
