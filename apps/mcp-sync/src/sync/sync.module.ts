import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { StoreModule } from '../store/store.module';
import { SyncScheduler } from './sync.scheduler';
import { SyncService } from './sync.service';

@Module({
  imports: [StoreModule, ConnectionsModule],
  providers: [SyncService, SyncScheduler],
  exports: [SyncService, SyncScheduler],
})
export class SyncModule {}
