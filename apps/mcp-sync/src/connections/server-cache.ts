import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { MCP_SERVER_EVENTS } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { ServerTarget } from './connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { TargetBuilder } from './target-builder';
import { ServersRepository } from '../store/servers.repository';

export interface CachedServer {
  server: McpServerEntity;
  /** Secrets opened once per load, not per call. */
  target: ServerTarget;
}

const MAX_ENTRIES = 10_000;

/**
 * Servers as tool calls need them, without a database read and an unsealing per call, in the one
 * org-scoped cache (one load per server for concurrent calls; a load that raced a change is used
 * once, never kept). An entry lives MCP_SERVER_CACHE_TTL_MS at most, and goes at once when this
 * replica updates or removes the server, or when any replica publishes a sync (an update always
 * ends in one) or a removal of it. A server is only ever found in its own org. Removed or unknown
 * servers are never cached.
 */
@Injectable()
export class ServerCache implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ServerCache.name);
  private readonly cache = new OrgScopedCache<CachedServer | null>(MAX_ENTRIES);
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly servers: ServersRepository,
    private readonly targets: TargetBuilder,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  onModuleInit(): void {
    this.sub = this.messaging.onEvents(MCP_SERVER_EVENTS, (_e, p) => this.invalidate(p.org_id, p.server_id));
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** The org's server with its target, or null when the org has no such server. */
  async get(orgId: string, serverId: string): Promise<CachedServer | null> {
    const ttl = this.config.MCP_SERVER_CACHE_TTL_MS;
    const found = await this.cache.load(orgId, serverId, () => this.load(orgId, serverId), {
      ttlMs: (v) => (v ? ttl : 0),
    });
    return found.value;
  }

  /** Forgets the org's server: the next call reads it again. */
  invalidate(orgId: string, serverId: string): void {
    this.cache.forgetKey(orgId, serverId);
    this.log.debug(`forgot cached server ${serverId}`);
  }

  private async load(orgId: string, serverId: string): Promise<CachedServer | null> {
    const server = await this.servers.findById(orgId, serverId);
    return server ? { server, target: await this.targets.of(server) } : null;
  }
}
