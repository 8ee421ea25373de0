import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import {
  AGENT_TOOL_EVENTS,
  AgentToolsList,
  CLIENT_SIDE_TOOL_TYPES,
  MCP_SERVER_EVENTS,
  TOOL_EVENTS,
  TOOLSET_EVENTS,
  ToolsetsToolsList,
  type Tool,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { OrgScopedCache } from '@toolplane/platform';
import { endpointKey, type Endpoint } from './endpoint';
import { toMcpTool } from './mcp-tool.mapper';

/** One tool an endpoint serves: its registry record, its MCP definition and the approval setting that applies through this endpoint. */
export interface EndpointTool {
  tool: Tool;
  definition: McpTool;
  requiresApproval: boolean;
}

export interface EndpointTools {
  tools: EndpointTool[];
  byName: Map<string, EndpointTool>;
}

const REGISTRY_PAGE = 200;
const REQUEST_TIMEOUT_MS = 10_000;
/** Endpoints kept (their whole tool list each). A change of one of them is told by an event; the TTL bounds a missed one. */
const CACHE_MAX = 5_000;
const CACHE_TTL_MS = 60_000;

/** Who to tell that an endpoint's tool list changed (sessions with an open stream). */
export type ListChangedListener = (org: string, endpoint: string | undefined) => void;

/**
 * The tools of an MCP endpoint — an agent's attached tools, or a published tool set — as MCP
 * definitions, read from the registry and kept per (org, endpoint) in the one org-scoped cache.
 * Client-side tools are not served (the MCP client cannot run them for Toolplane), nor tools whose
 * schema is INVALID. The registry's events drop what they change and tell the sessions: an
 * attach or detach drops that agent's list; a tool changed, created or removed, or an MCP
 * server synced, drops the org's lists (a tool can be in any of them, by tag too).
 */
@Injectable()
export class EndpointToolsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(EndpointToolsService.name);
  private readonly cache = new OrgScopedCache<EndpointTools>(CACHE_MAX);
  private readonly listeners = new Set<ListChangedListener>();
  private subscription?: { unsubscribe(): void };

  constructor(private readonly messaging: MessagingClient) {}

  onModuleInit(): void {
    const byAgent = this.messaging.onEvents(AGENT_TOOL_EVENTS, (_e, p) =>
      this.changed(p.org_id, `agent:${p.agent_id}`),
    );
    const byToolset = this.messaging.onEvents(TOOLSET_EVENTS, (_e, p) => this.changed(p.org_id, `toolset:${p.name}`));
    const byOrg = this.messaging.onEvents([...TOOL_EVENTS, ...MCP_SERVER_EVENTS], (_e, p) =>
      this.changed(p.org_id, undefined),
    );
    this.subscription = { unsubscribe: () => [byAgent, byToolset, byOrg].forEach((s) => s.unsubscribe()) };
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  onListChanged(listener: ListChangedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An endpoint's tools (cached), or TOOLSET_NOT_FOUND-like errors of the registry as they come. */
  async of(org: string, endpoint: Endpoint): Promise<EndpointTools> {
    const key = endpointKey(endpoint);
    const { value } = await this.cache.load(org, key, () => this.fetch(org, endpoint), {
      ttlMs: CACHE_TTL_MS,
      part: key,
    });
    return value;
  }

  /** Drops what a change may concern and tells the listeners (endpoint undefined: any endpoint of the org). */
  changed(org: string, endpoint: string | undefined): void {
    if (endpoint) this.cache.forget(org, endpoint);
    else this.cache.forget(org);
    for (const l of this.listeners) {
      try {
        l(org, endpoint);
      } catch (e) {
        this.log.warn(`a list_changed listener failed: ${(e as Error).message}`);
      }
    }
  }

  private async fetch(org: string, endpoint: Endpoint): Promise<EndpointTools> {
    const rows: Array<{ tool: Tool; requires_approval: boolean }> = [];
    let cursor: string | undefined;
    do {
      const page = await this.page(org, endpoint, cursor);
      rows.push(...page.tools);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    const tools: EndpointTool[] = [];
    const byName = new Map<string, EndpointTool>();
    for (const r of rows) {
      if (!r.tool.name || CLIENT_SIDE_TOOL_TYPES.has(r.tool.tool_type) || byName.has(r.tool.name)) continue;
      if (isInvalid(r.tool)) continue;
      const t = { tool: r.tool, definition: toMcpTool(r.tool), requiresApproval: r.requires_approval };
      tools.push(t);
      byName.set(r.tool.name, t);
    }
    return { tools, byName };
  }

  private async page(
    org: string,
    endpoint: Endpoint,
    cursor: string | undefined,
  ): Promise<{ tools: Array<{ tool: Tool; requires_approval: boolean }>; next_cursor: string | null }> {
    const common = { org_id: org, limit: REGISTRY_PAGE, ...(cursor ? { cursor } : {}) };
    if (endpoint.kind === 'agent')
      return this.messaging.request(
        AgentToolsList,
        { ...common, agent_id: endpoint.id },
        { timeoutMs: REQUEST_TIMEOUT_MS },
      );
    return this.messaging.request(
      ToolsetsToolsList,
      { ...common, name: endpoint.id },
      { timeoutMs: REQUEST_TIMEOUT_MS },
    );
  }
}

function isInvalid(t: Tool): boolean {
  const meta = t.metadata_;
  const mcp = meta && typeof meta === 'object' ? (meta as { mcp?: { health?: unknown } }).mcp : undefined;
  return mcp?.health === 'INVALID';
}
