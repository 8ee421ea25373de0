import { Module } from '@nestjs/common';
import { ServerStoreModule } from '../servers/server-store.module';
import { ConnectionPool } from './connection-pool';
import { OAuthTokenStore } from './oauth-token-store';
import { OAuthTokens } from './oauth-tokens';

@Module({ imports: [ServerStoreModule], providers: [ConnectionPool, OAuthTokens, OAuthTokenStore], exports: [ConnectionPool, OAuthTokens, OAuthTokenStore] })
export class ConnectionsModule {}
