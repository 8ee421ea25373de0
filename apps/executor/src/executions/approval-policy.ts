import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import {
  AGENT_TOOL_EVENTS,
  AgentToolsList,
  CLIENT_SIDE_TOOL_TYPES,
  ErrorCode,
  TOOL_EVENTS,
  TOOLSET_EVENTS,
  ToolplaneError,
  ToolsetsToolsList,
  type Tool,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import type { CallKind } from './call-lifecycle.service';

/** Pages of an agent's or a tool set's tools read at most (200 tools a page). */
const MAX_PAGES = 50;

/** Whom a call is made for: an agent, a published tool set (never both), or neither. */
export interface CallVia {
  agentId?: string;
  toolset?: string;
}

/** An agent's or a set's tools: whether each needs approval (tool id → requires_approval), and their names (name → id). */
interface Settings {
  approval: ReadonlyMap<string, boolean>;
  ids: ReadonlyMap<string, string>;
}

/** The cache key and part of an agent's or a set's settings (one namespace each: an agent id may look like anything). */
const agentKey = (agentId: string) => `agent:${agentId}`;
const toolsetKey = (name: string) => `toolset:${name}`;

/**
 * Which calls run, wait for a human, or go to their client. A client-side tool (tool_type client,
 * letta_core, letta_memory_core) is never run by Toolplane. A call needs approval when:
 * - through a published tool set: the set's effective setting for the tool says so (toolsets.tools.list's
 *   `requires_approval`: the set's policy, else the tool's default); a tool not in the set is not
 *   callable through it (TOOL_NOT_FOUND naming the set, `memberOf`);
 * - for an agent: the agent's setting for the tool (agents.tools.list: its per-agent override of the
 *   tool's default), else — a tool not in the agent's set — the tool's default_requires_approval;
 * - else when the tool's default_requires_approval does.
 *
 * An agent's or a set's settings are read from the registry (all pages) and kept per (org, agent)
 * and (org, set) in one org-scoped cache for TOOL_CACHE_TTL_MS; an agent-tools event drops that
 * agent's, a toolset event that set's, a tool event the org's (a tool's default changed, a tool
 * tagged later joined a set). A registry that cannot answer fails the call: approval is never
 * skipped. A set larger than the pages read is cut there: a tool past the cut is not callable
 * through it (closed, never run without its approval).
 */
@Injectable()
export class ApprovalPolicy implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ApprovalPolicy.name);
  private readonly sets: OrgScopedCache<Settings>;
  private subs: Array<{ unsubscribe(): void }> = [];

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {
    this.sets = new OrgScopedCache(config.TOOL_CACHE_MAX_ENTRIES);
  }

  onModuleInit(): void {
    this.subs = [
      this.messaging.onEvents(AGENT_TOOL_EVENTS, (_e, p) => this.sets.forget(p.org_id, agentKey(p.agent_id))),
      this.messaging.onEvents(TOOLSET_EVENTS, (_e, p) => this.sets.forget(p.org_id, toolsetKey(p.name))),
      this.messaging.onEvents(TOOL_EVENTS, (_e, p) => this.sets.forget(p.org_id)),
    ];
  }

  onModuleDestroy(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  /**
   * The id of the set's member the call names (by id or name). TOOL_NOT_FOUND naming the set for
   * any other tool — the same answer whether the org has such a tool or not, so a call through a
   * set never learns of tools outside it; TOOLSET_NOT_FOUND (the registry's) for an unknown set.
   */
  async memberOf(orgId: string, toolset: string, ref: { tool_id?: string; tool_name?: string }): Promise<string> {
    const { approval, ids } = await this.toolsetSettings(orgId, toolset);
    const id =
      ref.tool_id !== undefined ? (approval.has(ref.tool_id) ? ref.tool_id : undefined) : ids.get(ref.tool_name ?? '');
    if (id === undefined) throw notInToolset(toolset, ref.tool_id ?? ref.tool_name ?? '');
    return id;
  }

  async kindOf(orgId: string, tool: Tool, via: CallVia = {}): Promise<CallKind> {
    if (await this.needsApproval(orgId, tool, via)) return 'approval';
    // Client tools and the core families (send_message, memory tools: their state is the agent runtime's).
    return CLIENT_SIDE_TOOL_TYPES.has(tool.tool_type) ? 'client' : 'run';
  }

  private async needsApproval(orgId: string, tool: Tool, via: CallVia): Promise<boolean> {
    const byDefault = tool.default_requires_approval === true;
    if (via.toolset !== undefined) {
      const own = (await this.toolsetSettings(orgId, via.toolset)).approval.get(tool.id);
      // Left the set since memberOf (an event in between): not callable through it, never run unheld.
      if (own === undefined) throw notInToolset(via.toolset, tool.name ?? tool.id);
      return own;
    }
    if (via.agentId !== undefined) {
      return (await this.agentSettings(orgId, via.agentId)).approval.get(tool.id) ?? byDefault;
    }
    return byDefault;
  }

  private toolsetSettings(orgId: string, name: string): Promise<Settings> {
    return this.settings(orgId, toolsetKey(name), () =>
      this.read(`tool set ${name}`, (cursor) =>
        this.messaging.request(
          ToolsetsToolsList,
          { org_id: orgId, name, limit: 200, ...(cursor ? { cursor } : {}) },
          this.registryOpts(),
        ),
      ),
    );
  }

  private agentSettings(orgId: string, agentId: string): Promise<Settings> {
    return this.settings(orgId, agentKey(agentId), () =>
      this.read(`agent ${agentId}`, (cursor) =>
        this.messaging.request(
          AgentToolsList,
          { org_id: orgId, agent_id: agentId, limit: 200, ...(cursor ? { cursor } : {}) },
          this.registryOpts(),
        ),
      ),
    );
  }

  /** The settings under `key` (also its cache part), loaded once for every concurrent caller; a load that raced an event is used once, not kept. */
  private async settings(orgId: string, key: string, load: () => Promise<Settings>): Promise<Settings> {
    return (await this.sets.load(orgId, key, load, { ttlMs: this.config.TOOL_CACHE_TTL_MS, part: key })).value;
  }

  /** Every page of an agent's or a set's tools (up to MAX_PAGES), as settings. */
  private async read(
    what: string,
    page: (
      cursor: string | undefined,
    ) => Promise<{ tools: ReadonlyArray<{ tool: Tool; requires_approval: boolean }>; next_cursor: string | null }>,
  ): Promise<Settings> {
    const approval = new Map<string, boolean>();
    const ids = new Map<string, string>();
    let cursor: string | undefined;
    for (let n = 0; n < MAX_PAGES; n++) {
      const r = await page(cursor);
      for (const t of r.tools) {
        approval.set(t.tool.id, t.requires_approval);
        if (t.tool.name) ids.set(t.tool.name, t.tool.id);
      }
      cursor = r.next_cursor ?? undefined;
      if (!cursor) break;
    }
    if (cursor) this.log.warn(`the ${what} has more than ${MAX_PAGES * 200} tools: the others are left out`);
    return { approval, ids };
  }

  private registryOpts() {
    return { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS };
  }
}

function notInToolset(toolset: string, tool: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, `The tool set ${toolset} has no tool ${tool}`, { toolset, tool });
}
