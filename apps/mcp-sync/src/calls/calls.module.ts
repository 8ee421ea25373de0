import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { ServerStoreModule } from '../store/server-store.module';
import { CallsController } from './calls.controller';
import { CallsService } from './calls.service';

@Module({ imports: [ServerStoreModule, ConnectionsModule], controllers: [CallsController], providers: [CallsService] })
export class CallsModule {}
