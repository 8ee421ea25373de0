import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AGENT_TOOL_EVENTS, AgentToolsList, CLIENT_SIDE_TOOL_TYPES, TOOL_EVENTS, type Tool } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import type { CallKind } from './call-lifecycle.service';

/** Pages of an agent's tool set read at most (200 tools a page). */
const MAX_PAGES = 50;

/**
 * Which calls run, wait for a human, or go to their client. A client-side tool (tool_type client,
 * letta_core, letta_memory_core) is never run by Toolplane. A call needs approval when the agent's setting for the tool says so (the registry's
 * agent tool sets: `requires_approval`, its per-agent override of the tool's default), else —
 * no agent, or a tool not in the agent's set — when the tool's default_requires_approval does.
 *
 * An agent's settings are read from the registry (agents.tools.list) and kept per (org, agent)
 * for TOOL_CACHE_TTL_MS; an agent-tools event drops that agent's, a tool event the org's (a
 * tool's default changed). A registry that cannot answer fails the call: approval is never skipped.
 */
@Injectable()
export class ApprovalPolicy implements OnModuleInit, OnModuleDestroy {
  private readonly sets: OrgScopedCache<ReadonlyMap<string, boolean>>;
  private subs: Array<{ unsubscribe(): void }> = [];

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {
    this.sets = new OrgScopedCache(config.TOOL_CACHE_MAX_ENTRIES);
  }

  onModuleInit(): void {
    this.subs = [
      this.messaging.onEvents(AGENT_TOOL_EVENTS, (_e, p) => this.sets.forget(p.org_id, p.agent_id)),
      this.messaging.onEvents(TOOL_EVENTS, (_e, p) => this.sets.forget(p.org_id)),
    ];
  }

  onModuleDestroy(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  async kindOf(orgId: string, tool: Tool, agentId: string | undefined): Promise<CallKind> {
    const approval = agentId ? ((await this.agentSettings(orgId, agentId)).get(tool.id) ?? tool.default_requires_approval === true) : tool.default_requires_approval === true;
    if (approval) return 'approval';
    // Client tools and the core families (send_message, memory tools: their state is the agent runtime's).
    return CLIENT_SIDE_TOOL_TYPES.has(tool.tool_type) ? 'client' : 'run';
  }

  /** The agent's tools and whether each needs approval for it (tool id → requires_approval). */
  private async agentSettings(orgId: string, agentId: string): Promise<ReadonlyMap<string, boolean>> {
    const hit = this.sets.get(orgId, agentId);
    if (hit) return hit.value;
    const version = this.sets.versionOf(orgId, agentId);
    const settings = new Map<string, boolean>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await this.messaging.request(AgentToolsList, { org_id: orgId, agent_id: agentId, limit: 200, ...(cursor ? { cursor } : {}) }, { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS });
      for (const t of r.tools) settings.set(t.tool.id, t.requires_approval);
      if (!r.next_cursor) break;
      cursor = r.next_cursor;
    }
    this.sets.set(orgId, agentId, settings, this.config.TOOL_CACHE_TTL_MS, version, agentId);
    return settings;
  }
}
