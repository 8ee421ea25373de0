import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ExternalToolsSync,
  McpServerRemoved,
  type McpServersRemove,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import { ConnectionPool } from '../connections/connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import { SyncService } from '../sync/sync.service';
import { ServerCache } from '../connections/server-cache';
import { ServerSteps } from './server-steps';
import { ServersRepository } from '../store/servers.repository';

/** mcp.servers.remove: the row, then its tools (put back if the registry refuses), its tokens, and the removal event. */
@Injectable()
export class RemoveServer {
  private readonly log = new Logger(RemoveServer.name);

  constructor(
    private readonly records: ServerSteps,
    private readonly servers: ServersRepository,
    private readonly cache: ServerCache,
    private readonly pool: ConnectionPool,
    private readonly sync: SyncService,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async remove(req: RequestOf<typeof McpServersRemove>): Promise<ReplyOf<typeof McpServersRemove>> {
    const found = await this.records.find(req);
    // After any sync of it running here; the row goes before the tools (see SyncService.undoIfRemoved).
    const { server, reply } = await this.sync.exclusive(found.id, async () => {
      const server = (await this.servers.findById(found.orgId, found.id)) ?? found;
      await this.servers.delete(server.id);
      this.cache.invalidate(server.orgId, server.id);
      await this.pool.drop(server.id);
      try {
        const reply = await this.messaging.request(
          ExternalToolsSync,
          { org_id: server.orgId, tool_type: 'external_mcp', source_id: server.id, tools: [], complete: true },
          { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS },
        );
        return { server, reply };
      } catch (e) {
        // The tools could not be removed: put the server back, so that the removal can be retried.
        await this.servers
          .restore(server)
          .catch((r: Error) =>
            this.log.error(`could not restore MCP server ${server.id} after a failed removal: ${r.message}`),
          );
        throw e;
      }
    });
    if (server.authType === 'oauth') await this.records.forgetTokens(server.orgId, server.id);
    const eventId = randomUUID();
    await this.messaging.publish(
      McpServerRemoved,
      {
        event_id: eventId,
        occurred_at: new Date().toISOString(),
        org_id: server.orgId,
        server_id: server.id,
        server_name: server.name,
        tools_removed: reply.removed.length,
      },
      eventId,
    );
    this.log.log(
      `removed MCP server ${server.name} (${server.id}) and ${reply.removed.length} tool(s) from org ${server.orgId}`,
    );
    return { removed: true, tools_removed: reply.removed.length };
  }
}
