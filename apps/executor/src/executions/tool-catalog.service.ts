import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { TOOL_EVENTS_SUBJECTS, ToolsGet, type Tool } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';

interface Entry {
  tool: Tool;
  expires: number;
}

/**
 * Tools by id or name, from the registry, cached per org. Tool events evict entries at once; the
 * TTL bounds staleness if an event is missed.
 */
@Injectable()
export class ToolCatalogService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ToolCatalogService.name);
  private readonly cache = new Map<string, Entry>();
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  onModuleInit(): void {
    this.sub = this.messaging.subscribeEvents(TOOL_EVENTS_SUBJECTS, (_subject, payload) => {
      const p = payload as { org_id?: string; tool_id?: string; tool_name?: string | null };
      if (typeof p.org_id !== 'string') return;
      this.evict(p.org_id, p.tool_id, p.tool_name ?? undefined);
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** The tool and whether it came from the cache. Throws TOOL_NOT_FOUND from the registry. */
  async find(orgId: string, ref: { id?: string; name?: string }): Promise<{ tool: Tool; cached: boolean }> {
    const key = ref.id ? `${orgId}\u0000id\u0000${ref.id}` : `${orgId}\u0000name\u0000${ref.name}`;
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return { tool: hit.tool, cached: true };
    const { tool } = await this.messaging.request(ToolsGet, { org_id: orgId, ...(ref.id ? { id: ref.id } : { name: ref.name }) }, {
      timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS,
    });
    this.put(orgId, tool);
    return { tool, cached: false };
  }

  private put(orgId: string, tool: Tool): void {
    if (this.config.TOOL_CACHE_TTL_MS === 0) return;
    if (this.cache.size >= this.config.TOOL_CACHE_MAX_ENTRIES) this.cache.clear();
    const entry = { tool, expires: Date.now() + this.config.TOOL_CACHE_TTL_MS };
    this.cache.set(`${orgId}\u0000id\u0000${tool.id}`, entry);
    if (tool.name) this.cache.set(`${orgId}\u0000name\u0000${tool.name}`, entry);
  }

  private evict(orgId: string, id?: string, name?: string): void {
    const byId = id ? this.cache.get(`${orgId}\u0000id\u0000${id}`) : undefined;
    if (id) this.cache.delete(`${orgId}\u0000id\u0000${id}`);
    for (const n of new Set([name, byId?.tool.name ?? undefined])) {
      if (n) this.cache.delete(`${orgId}\u0000name\u0000${n}`);
    }
    this.log.debug(`evicted tool ${id ?? name} of org ${orgId}`);
  }
}
