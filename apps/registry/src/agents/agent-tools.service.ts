import { Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type AgentTool,
  type AgentToolsAttach,
  type AgentToolsDetach,
  type AgentToolsList,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { BuiltinToolsService } from '../builtins/builtin-tools.service';
import { attachedEvent, detachedEvents } from '../events/agent-tool-events';
import { EventOutbox } from '../events/event-outbox';
import { decodeCursor, encodeCursor } from '../catalog/page-cursor';
import { toWireTool } from '../catalog/tool.mapper';
import { AgentToolsRepository, type Attachment, type ToolRefs } from './agent-tools.repository';
import { ToolDefinitionsService } from './tool-definitions.service';

/**
 * Agent tool sets: attach, detach, list. Each change and its event are one transaction (the
 * outbox); this replica's definitions of the agent are dropped before the reply, the other
 * replicas' when the event reaches them.
 */
@Injectable()
export class AgentToolsService {
  private readonly log = new Logger(AgentToolsService.name);

  constructor(
    private readonly attachments: AgentToolsRepository,
    private readonly outbox: EventOutbox,
    private readonly definitions: ToolDefinitionsService,
    private readonly builtins: BuiltinToolsService,
  ) {}

  async attach(req: RequestOf<typeof AgentToolsAttach>): Promise<ReplyOf<typeof AgentToolsAttach>> {
    await this.builtins.ensure(req.org_id);
    const refs = refsOf(req);
    const { attached, added, touched } = await this.attachments.withTools(req.org_id, refs, async (tools, m) => {
      // All or none, and the same answer for another org's tool as for no tool at all.
      const found = new Set(tools.flatMap((t) => [t.id, t.name]));
      const missing = [...new Set(refs.ids ?? refs.names ?? [])].filter((r) => !found.has(r));
      if (missing.length) throw notFound(missing);
      const ordered = orderAs(tools, refs);
      const { added, changed } = await this.attachments.attach(
        m,
        req.org_id,
        req.agent_id,
        ordered.map((t) => t.id),
        req.requires_approval,
      );
      const attached = await this.attachments.findMany(
        m,
        req.org_id,
        req.agent_id,
        ordered.map((t) => t.id),
      );
      const touched = new Set([...added, ...changed]);
      const events = attached
        .filter((a) => touched.has(a.tool.id))
        .map((a) => ({ tool_id: a.tool.id, tool_name: a.tool.name, ...approvalOf(a) }));
      if (events.length) await this.outbox.stage(m, [attachedEvent(req.org_id, req.agent_id, events)]);
      const byId = new Map(attached.map((a) => [a.tool.id, a]));
      return { attached: ordered.map((t) => byId.get(t.id)!), added: added.length, touched: touched.size };
    });
    if (touched) this.definitions.forget(req.org_id, req.agent_id);
    await this.outbox.drain(req.org_id);
    this.log.log(
      `attached ${added} new tool(s) (${attached.length} asked) to agent ${req.agent_id} in org ${req.org_id}`,
    );
    return { tools: attached.map(toWireAgentTool), attached: added };
  }

  async detach(req: RequestOf<typeof AgentToolsDetach>): Promise<ReplyOf<typeof AgentToolsDetach>> {
    const detached = await this.attachments.detach(req.org_id, req.agent_id, refsOf(req), (rows, m) =>
      this.outbox.stage(
        m,
        detachedEvents(
          req.org_id,
          rows.map((r) => ({ agent_id: req.agent_id, tool_id: r.tool_id, name: r.name })),
          'request',
        ),
      ),
    );
    if (detached.length) this.definitions.forget(req.org_id, req.agent_id);
    await this.outbox.drain(req.org_id);
    this.log.log(`detached ${detached.length} tool(s) from agent ${req.agent_id} in org ${req.org_id}`);
    return { detached };
  }

  async list(req: RequestOf<typeof AgentToolsList>): Promise<ReplyOf<typeof AgentToolsList>> {
    const afterSeq = req.cursor ? decodeCursor(req.cursor) : undefined;
    const rows = await this.attachments.page(req.org_id, req.agent_id, afterSeq, req.limit + 1);
    const page = rows.slice(0, req.limit);
    const next = rows.length > req.limit ? encodeCursor(page[page.length - 1]!.seq) : null;
    return { tools: page.map(toWireAgentTool), next_cursor: next };
  }
}

function refsOf(req: { tool_ids?: string[]; tool_names?: string[] }): ToolRefs {
  return req.tool_ids ? { ids: req.tool_ids } : { names: req.tool_names };
}

/** The tools in the order the request named them (duplicates once). */
function orderAs<T extends { id: string; name: string }>(tools: T[], refs: ToolRefs): T[] {
  const by = new Map(tools.map((t) => [refs.ids ? t.id : t.name, t]));
  return [...new Set(refs.ids ?? refs.names ?? [])].map((r) => by.get(r)!).filter(Boolean);
}

/** The agent's override, else the tool's default, else false. */
function approvalOf(a: Attachment): { requires_approval: boolean; requires_approval_override: boolean | null } {
  return {
    requires_approval: a.requiresApproval ?? a.tool.defaultRequiresApproval ?? false,
    requires_approval_override: a.requiresApproval,
  };
}

function toWireAgentTool(a: Attachment): AgentTool {
  return { tool: toWireTool(a.tool), ...approvalOf(a), attached_at: a.attachedAt.toISOString() };
}

function notFound(refs: string[]): ToolplaneError {
  const shown = refs.slice(0, 10).join(', ');
  return new ToolplaneError(
    ErrorCode.TOOL_NOT_FOUND,
    `No tool ${shown}${refs.length > 10 ? ` (and ${refs.length - 10} more)` : ''} in this org: nothing was attached`,
    { tools: refs.slice(0, 100) },
  );
}
