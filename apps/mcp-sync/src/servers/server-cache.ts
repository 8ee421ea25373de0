import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { MCP_SERVER_EVENTS_SUBJECTS } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ServerTarget } from '../connections/connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { McpServerEntity } from './mcp-server.entity';
import { ServerTargets } from './server-targets';
import { ServersRepository } from './servers.repository';

export interface CachedServer {
  server: McpServerEntity;
  /** Secrets opened once per load, not per call. */
  target: ServerTarget;
}

interface Entry {
  value: CachedServer;
  expires: number;
}

/** The sync and removal events of every replica (core NATS: each replica gets them all). */
const SERVER_EVENTS = MCP_SERVER_EVENTS_SUBJECTS;
const MAX_ENTRIES = 10_000;

/**
 * Servers as tool calls need them, without a database read and an unsealing per call. An entry
 * lives MCP_SERVER_CACHE_TTL_MS at most, and goes at once when this replica updates or removes
 * the server, or when any replica publishes a sync (an update always ends in one) or a removal of
 * it. Keyed by org and server: a server is only ever found in its own org. Removed or unknown
 * servers are never cached.
 */
@Injectable()
export class ServerCache implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ServerCache.name);
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<CachedServer | null>>();
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly servers: ServersRepository,
    private readonly targets: ServerTargets,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  onModuleInit(): void {
    this.sub = this.messaging.subscribeEvents(SERVER_EVENTS, (_subject, payload) => {
      const id = (payload as { server_id?: unknown } | null)?.server_id;
      if (typeof id === 'string') this.invalidate(id);
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** The org's server with its target, or null when the org has no such server. */
  async get(orgId: string, serverId: string): Promise<CachedServer | null> {
    const ttl = this.config.MCP_SERVER_CACHE_TTL_MS;
    if (ttl === 0) return this.load(orgId, serverId);
    const key = `${serverId}\u0000${orgId}`;
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.value;
    let p = this.loading.get(key);
    if (!p) {
      p = this.load(orgId, serverId);
      this.loading.set(key, p);
      const mine = p;
      void p.then(
        (value) => {
          // Invalidated meanwhile: the load may predate the change, so it is not kept.
          if (this.loading.get(key) !== mine) return;
          this.loading.delete(key);
          if (!value) return this.entries.delete(key);
          if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
          this.entries.set(key, { value, expires: Date.now() + ttl });
        },
        () => {
          if (this.loading.get(key) === mine) this.loading.delete(key);
        },
      );
    }
    return p;
  }

  /** Forgets the server (every org key of it): the next call reads it again. */
  invalidate(serverId: string): void {
    const prefix = `${serverId}\u0000`;
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
    for (const k of this.loading.keys()) if (k.startsWith(prefix)) this.loading.delete(k);
    this.log.debug(`forgot cached server ${serverId}`);
  }

  private async load(orgId: string, serverId: string): Promise<CachedServer | null> {
    const server = await this.servers.findById(orgId, serverId);
    return server ? { server, target: await this.targets.of(server) } : null;
  }
}
