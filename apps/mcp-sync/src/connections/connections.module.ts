import { Module } from '@nestjs/common';
import { ServerStoreModule } from '../servers/server-store.module';
import { ConnectionPool } from './connection-pool';

@Module({ imports: [ServerStoreModule], providers: [ConnectionPool], exports: [ConnectionPool] })
export class ConnectionsModule {}
