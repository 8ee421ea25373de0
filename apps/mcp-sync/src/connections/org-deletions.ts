import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { OrgDeleted } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { ConnectionPool } from './connection-pool';

/**
 * A deleted org (credentials deleted its secrets and its users' OAuth tokens before it said so):
 * every session of its servers on this replica closes and every token cached for them is
 * forgotten, so no call finds a connection made with them or a token read before the deletion.
 * The next call of such a server reads credentials again and finds nothing.
 */
@Injectable()
export class OrgDeletions implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(OrgDeletions.name);
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly pool: ConnectionPool,
    private readonly messaging: MessagingClient,
  ) {}

  onModuleInit(): void {
    this.sub = this.messaging.onEvents([OrgDeleted], (_e, p) => void this.dropped(p.org_id));
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  private async dropped(orgId: string): Promise<void> {
    const servers = await this.pool.dropOrg(orgId);
    this.log.log(
      `org ${orgId} was deleted: closed the sessions of ${servers} of its server(s) and forgot their tokens`,
    );
  }
}
