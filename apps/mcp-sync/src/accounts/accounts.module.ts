import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { StoreModule } from '../store/store.module';
import { AccountQueries } from './account-queries';
import { AccountsController } from './accounts.controller';
import { RevokeAccount } from './revoke-account';

/** End users' connected accounts (connections.list|get|revoke). */
@Module({
  imports: [StoreModule, ConnectionsModule],
  controllers: [AccountsController],
  providers: [AccountQueries, RevokeAccount],
  exports: [AccountQueries],
})
export class AccountsModule {}
