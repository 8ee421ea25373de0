import { Injectable, Logger } from '@nestjs/common';
import { ConnectionAuthorized, ConnectionExpired, ConnectionRefreshed, ConnectionRevoked } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';

const DESCRIPTORS = {
  authorized: ConnectionAuthorized,
  refreshed: ConnectionRefreshed,
  expired: ConnectionExpired,
  revoked: ConnectionRevoked,
};
export type ConnectionChange = keyof typeof DESCRIPTORS;

/**
 * An end user's connected account changed: `connection.*` on the events stream, so an agent
 * runtime can tell the user to reconnect. Ids and names only, never a token. Best effort: a
 * failed publish is logged and never fails the flow that caused it.
 */
@Injectable()
export class ConnectionEvents {
  private readonly log = new Logger(ConnectionEvents.name);

  constructor(private readonly messaging: MessagingClient) {}

  async publish(
    change: ConnectionChange,
    c: { orgId: string; userId: string; serverId: string; serverName: string },
  ): Promise<void> {
    const eventId = randomUUID();
    const payload = {
      event_id: eventId,
      occurred_at: new Date().toISOString(),
      org_id: c.orgId,
      user_id: c.userId,
      server_id: c.serverId,
      server_name: c.serverName,
    };
    await this.messaging
      .publish(DESCRIPTORS[change], payload, eventId)
      .catch((e: Error) =>
        this.log.warn(`connection.${change} of MCP server ${c.serverId} not published: ${e.message}`),
      );
  }
}
