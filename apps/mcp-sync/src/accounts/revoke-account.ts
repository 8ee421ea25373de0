import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ConnectionRevoked, type ConnectionsRevoke, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { ConnectionEvents } from '../connections/connection-events';
import { ConnectionPool } from '../connections/connection-pool';
import { issuerOf } from '../connections/oauth-provider';
import { OAuthTokenStore } from '../connections/oauth-token-store';
import { OAuthClient } from '../connections/oauth-client';
import { TargetBuilder } from '../connections/target-builder';
import { AccountQueries } from './account-queries';

/**
 * connections.revoke: an end user's account is disconnected from a server — their tokens deleted
 * (credentials), their sessions closed on every replica (connection.revoked, which each replica
 * follows), and the grant revoked at the authorization server where its metadata has a
 * revocation endpoint (RFC 7009). Their next call asks them to authorize again.
 */
@Injectable()
export class RevokeAccount implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RevokeAccount.name);
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly accounts: AccountQueries,
    private readonly targets: TargetBuilder,
    private readonly store: OAuthTokenStore,
    private readonly oauth: OAuthClient,
    private readonly pool: ConnectionPool,
    private readonly events: ConnectionEvents,
    private readonly messaging: MessagingClient,
  ) {}

  onModuleInit(): void {
    // Revoked on another replica: this one's sessions and cached token of that user go too.
    this.sub = this.messaging.onEvents([ConnectionRevoked], (_e, p) => void this.pool.dropUser(p.server_id, p.user_id));
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  async revoke(req: RequestOf<typeof ConnectionsRevoke>): Promise<ReplyOf<typeof ConnectionsRevoke>> {
    const server = await this.accounts.server(req.org_id, req.server);
    const target = await this.targets.of(server);
    const oauth = await this.pool.oauthTarget({ ...target, userId: req.user_id });
    const issuer = oauth ? issuerOf(oauth.auth, oauth.state) : undefined;
    const tokens = oauth && issuer ? await this.store.fetch(req.org_id, server.id, issuer, req.user_id) : null;
    const deleted = await this.store.forget(req.org_id, server.id, req.user_id);
    await this.pool.dropUser(server.id, req.user_id);
    const upstream = oauth && tokens ? await this.oauth.revoke(oauth, tokens) : 'none';
    if (deleted) {
      this.log.log(
        `revoked an end user's connection to MCP server ${server.name} (${server.id}) in org ${req.org_id} (upstream: ${upstream})`,
      );
      await this.events.publish('revoked', {
        orgId: req.org_id,
        userId: req.user_id,
        serverId: server.id,
        serverName: server.name,
      });
    }
    return { revoked: deleted > 0, upstream };
  }
}
