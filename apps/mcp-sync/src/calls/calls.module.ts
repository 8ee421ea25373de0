import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { StoreModule } from '../store/store.module';
import { CallsController } from './calls.controller';
import { CallsService } from './calls.service';

@Module({ imports: [StoreModule, ConnectionsModule], controllers: [CallsController], providers: [CallsService] })
export class CallsModule {}
