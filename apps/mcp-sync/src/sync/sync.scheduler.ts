import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { ConnectionPool } from '../connections/connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import { ServersRepository } from '../store/servers.repository';
import { SyncService } from './sync.service';

/** The next periodic resync, `interval ± jitter`, so servers spread out. */
export function nextResyncInMs(intervalMs: number, jitter: number, random = Math.random): number {
  return intervalMs * (1 + jitter * (2 * random() - 1));
}

/**
 * Keeps servers in step: a tools/list_changed notification (debounced) re-lists every page, and
 * servers whose periodic resync is due are claimed (one replica each) and resynced.
 */
@Injectable()
export class SyncScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(SyncScheduler.name);
  private readonly debounced = new Map<string, NodeJS.Timeout>();
  private tick?: NodeJS.Timeout;
  private ticking = false;

  constructor(
    private readonly pool: ConnectionPool,
    private readonly servers: ServersRepository,
    private readonly sync: SyncService,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.pool.onListChanged((serverId, orgId) => this.listChanged(serverId, orgId));
    if (this.config.MCP_RESYNC_INTERVAL_MS > 0)
      this.tick = setInterval(() => void this.resyncDue(), this.config.MCP_RESYNC_TICK_MS).unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.tick);
    for (const t of this.debounced.values()) clearTimeout(t);
    this.debounced.clear();
  }

  nextResyncInMs(): number {
    return nextResyncInMs(this.config.MCP_RESYNC_INTERVAL_MS || 3_600_000, this.config.MCP_RESYNC_JITTER);
  }

  private listChanged(serverId: string, orgId: string): void {
    clearTimeout(this.debounced.get(serverId));
    const t = setTimeout(async () => {
      this.debounced.delete(serverId);
      const server = await this.servers.findById(orgId, serverId).catch(() => null);
      if (!server) return this.log.log(`list_changed from ${serverId} ignored: the server was removed`);
      await this.sync
        .sync(server, 'list_changed')
        .catch((e: Error) => this.log.warn(`list_changed resync of ${server.name} failed: ${e.message}`));
    }, this.config.MCP_LIST_CHANGED_DEBOUNCE_MS);
    this.debounced.set(serverId, t);
  }

  private async resyncDue(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const due = await this.servers.claimDue(16, () => this.nextResyncInMs());
      await Promise.all(
        due.map((s) =>
          this.sync
            .sync(s, 'periodic')
            .catch((e: Error) => this.log.warn(`periodic resync of ${s.name} failed: ${e.message}`)),
        ),
      );
    } catch (e) {
      this.log.warn(`periodic resync round failed: ${(e as Error).message}`);
    } finally {
      this.ticking = false;
    }
  }
}
