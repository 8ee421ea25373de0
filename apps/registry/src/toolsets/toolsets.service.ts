import { Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  TOOL_ID,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type ToolsetsDelete,
  type ToolsetsGet,
  type ToolsetsList,
  type ToolsetsToolsList,
  type ToolsetsUpsert,
} from '@toolplane/contracts';
import { BuiltinToolsService } from '../builtins/builtin-tools.service';
import { EventOutbox } from '../events/event-outbox';
import { toolsetEvent } from '../events/toolset-events';
import { decodeCursor, encodeCursor } from '../catalog/page-cursor';
import { toWireTool } from '../catalog/tool.mapper';
import type { ToolsetEntity } from '../catalog/toolset.entity';
import { toWireToolset } from '../catalog/toolset.mapper';
import { ToolsetsRepository, type MemberKey, type ToolsetDefinition } from './toolsets.repository';

/**
 * Published tool sets: upsert, get, list, delete, and a set's members resolved now. Each change
 * and its event are one transaction (the outbox); an upsert that changes nothing writes nothing
 * and publishes nothing.
 */
@Injectable()
export class ToolsetsService {
  private readonly log = new Logger(ToolsetsService.name);

  constructor(
    private readonly toolsets: ToolsetsRepository,
    private readonly outbox: EventOutbox,
    private readonly builtins: BuiltinToolsService,
  ) {}

  async upsert(req: RequestOf<typeof ToolsetsUpsert>): Promise<ReplyOf<typeof ToolsetsUpsert>> {
    // A set may name a built-in: the org's built-ins exist before its names are checked.
    await this.builtins.ensure(req.org_id);
    const input = req.toolset;
    const def: ToolsetDefinition = {
      description: input.description ?? null,
      instructions: input.instructions ?? null,
      toolIds: unique(input.tool_ids),
      toolNames: unique(input.tool_names),
      tags: unique(input.tags),
      requiresApproval: input.requires_approval ?? null,
    };
    const { toolset, created, changed } = await this.toolsets.upsert(
      req.org_id,
      input.name,
      def,
      (found) => {
        // All or none, and the same answer for another org's tool as for no tool at all.
        const missing = [
          ...def.toolIds.filter((id) => !found.ids.has(id)),
          ...def.toolNames.filter((n) => !found.names.has(n)),
        ];
        if (missing.length) throw toolsNotFound(missing);
      },
      (t, isNew, m) => this.outbox.stage(m, [toolsetEvent('upserted', t)]),
    );
    if (changed) await this.outbox.drain(req.org_id);
    this.log.log(
      `${created ? 'created' : changed ? 'replaced' : 'left unchanged'} toolset ${toolset.id} (${toolset.name}) in org ${req.org_id}`,
    );
    return { toolset: toWireToolset(toolset), created };
  }

  async get(req: RequestOf<typeof ToolsetsGet>): Promise<ReplyOf<typeof ToolsetsGet>> {
    return { toolset: toWireToolset(await this.find(req.org_id, req.name)) };
  }

  async list(req: RequestOf<typeof ToolsetsList>): Promise<ReplyOf<typeof ToolsetsList>> {
    const afterSeq = req.cursor ? decodeCursor(req.cursor) : undefined;
    const rows = await this.toolsets.page(req.org_id, afterSeq, req.limit + 1);
    const page = rows.slice(0, req.limit);
    const next = rows.length > req.limit ? encodeCursor(page[page.length - 1]!.seq) : null;
    return { toolsets: page.map(toWireToolset), next_cursor: next };
  }

  async delete(req: RequestOf<typeof ToolsetsDelete>): Promise<ReplyOf<typeof ToolsetsDelete>> {
    const deleted = await this.toolsets.deleteByName(req.org_id, req.name, (t, m) =>
      this.outbox.stage(m, [toolsetEvent('deleted', t)]),
    );
    if (!deleted) return { deleted: false };
    await this.outbox.drain(req.org_id);
    this.log.log(`deleted toolset ${deleted.id} (${deleted.name}) in org ${req.org_id}`);
    return { deleted: true };
  }

  /** The set's members now, each with the approval that applies to calls through the set. */
  async tools(req: RequestOf<typeof ToolsetsToolsList>): Promise<ReplyOf<typeof ToolsetsToolsList>> {
    const set = await this.find(req.org_id, req.name);
    const after = req.cursor ? decodeMemberCursor(req.cursor) : undefined;
    const rows = await this.toolsets.members(req.org_id, set, after, req.limit + 1);
    const page = rows.slice(0, req.limit);
    const last = page[page.length - 1];
    const next = rows.length > req.limit && last ? encodeMemberCursor({ name: last.name, id: last.id }) : null;
    return {
      tools: page.map((t) => ({
        tool: toWireTool(t),
        requires_approval: set.requiresApproval ?? t.defaultRequiresApproval ?? false,
      })),
      next_cursor: next,
    };
  }

  private async find(orgId: string, name: string): Promise<ToolsetEntity> {
    const set = await this.toolsets.findByName(orgId, name);
    if (!set)
      throw new ToolplaneError(ErrorCode.TOOLSET_NOT_FOUND, `No toolset ${name} in this org`, { toolset: name });
    return set;
  }
}

/** The entries once each, in the order first given. */
function unique(xs: string[] | undefined): string[] {
  return [...new Set(xs ?? [])];
}

function toolsNotFound(refs: string[]): ToolplaneError {
  const shown = refs.slice(0, 10).join(', ');
  return new ToolplaneError(
    ErrorCode.TOOL_NOT_FOUND,
    `No tool ${shown}${refs.length > 10 ? ` (and ${refs.length - 10} more)` : ''} in this org: the toolset was not stored`,
    { tools: refs.slice(0, 100) },
  );
}

/** The opaque cursor of a members page: the (name, id) of its last tool. */
export function encodeMemberCursor(k: MemberKey): string {
  return Buffer.from(JSON.stringify(['m', k.name, k.id])).toString('base64url');
}

/** The key a cursor of encodeMemberCursor carries, or CONTRACT_VIOLATION. */
export function decodeMemberCursor(cursor: string): MemberKey {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    v = undefined;
  }
  if (
    Array.isArray(v) &&
    v.length === 3 &&
    v[0] === 'm' &&
    typeof v[1] === 'string' &&
    v[1].length <= 256 &&
    !v[1].includes('\u0000') &&
    typeof v[2] === 'string' &&
    TOOL_ID.test(v[2])
  )
    return { name: v[1], id: v[2] };
  throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'cursor is not a cursor this service issued', {
    issues: [{ path: 'cursor', message: 'invalid' }],
  });
}
