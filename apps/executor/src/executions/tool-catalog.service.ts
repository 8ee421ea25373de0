import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { TOOL_EVENTS, ToolsGet, type Tool } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';

/**
 * Tools by id or name, from the registry, cached per org in the one org-scoped cache. Every entry
 * belongs to its tool (the cache part is the tool id), so a tool event drops the tool under every
 * key it was looked up by, and a lookup that raced the event is used once but never kept. The TTL
 * bounds staleness if an event is missed.
 */
@Injectable()
export class ToolCatalogService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ToolCatalogService.name);
  private readonly cache: OrgScopedCache<Tool>;
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {
    this.cache = new OrgScopedCache(config.TOOL_CACHE_MAX_ENTRIES);
  }

  onModuleInit(): void {
    this.sub = this.messaging.onEvents(TOOL_EVENTS, (_event, p) => this.evict(p.org_id, p.tool_id));
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** The tool and whether it came from the cache. Throws TOOL_NOT_FOUND from the registry. */
  async find(orgId: string, ref: { id?: string; name?: string }): Promise<{ tool: Tool; cached: boolean }> {
    const key = ref.id ? `id\u0000${ref.id}` : `name\u0000${ref.name}`;
    const found = await this.cache.load(
      orgId,
      key,
      async () => {
        const { tool } = await this.messaging.request(
          ToolsGet,
          { org_id: orgId, ...(ref.id ? { id: ref.id } : { name: ref.name }) },
          { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS },
        );
        return tool;
      },
      { ttlMs: this.config.TOOL_CACHE_TTL_MS, ...(ref.id ? { part: ref.id } : { partOf: (t: Tool) => t.id }) },
    );
    return { tool: found.value, cached: found.cached };
  }

  /** Forgets the tool under every key (its id, any name it was found by), and any lookup of the org still on its way. */
  private evict(orgId: string, toolId: string): void {
    this.cache.forget(orgId, toolId);
    this.log.debug(`evicted tool ${toolId} of org ${orgId}`);
  }
}
