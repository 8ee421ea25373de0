import { Injectable, Logger } from '@nestjs/common';
import {
  DEFAULT_RETURN_CHAR_LIMIT,
  ErrorCode,
  MAX_REPORTED_DETACHMENTS,
  ToolplaneError,
  type ExternalToolInput,
  type ExternalToolsStage,
  type ExternalToolsSync,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { ToolSetChanges } from '../agents/tool-set-changes.service';
import { BuiltinToolsService } from '../builtins/builtin-tools.service';
import { EventOutbox } from '../events/event-outbox';
import { toolEvent } from '../events/tool-events';
import type { ToolEntity } from '../catalog/tool.entity';
import { ExternalToolPagesRepository, type PageRef } from './external-tool-pages.repository';
import { ToolsRepository, type ToolFields } from './tools.repository';

type Reply = ReplyOf<typeof ExternalToolsSync>;

/**
 * Applies an external source's full tool set (an MCP server's) in one transaction: new names are
 * added, changed ones updated, and — when the listing was complete — the source's tools missing
 * from it removed. A name held by a custom tool or by another source's tool is never overwritten:
 * it comes back as a collision. Tool events are staged in the outbox inside the transaction and
 * published after it, as for upserts.
 */
@Injectable()
export class ExternalToolsService {
  private readonly log = new Logger(ExternalToolsService.name);

  constructor(
    private readonly tools: ToolsRepository,
    private readonly outbox: EventOutbox,
    private readonly pages: ExternalToolPagesRepository,
    private readonly toolSets: ToolSetChanges,
    private readonly builtins: BuiltinToolsService,
  ) {}

  /** One page of a tool set too large for one message; applied only by the sync naming its sync_id. */
  async stage(req: RequestOf<typeof ExternalToolsStage>): Promise<ReplyOf<typeof ExternalToolsStage>> {
    await this.pages.stage({ orgId: req.org_id, sourceId: req.source_id, syncId: req.sync_id }, req.page, req.tools);
    return { staged: req.tools.length };
  }

  async sync(req: RequestOf<typeof ExternalToolsSync>): Promise<Reply> {
    // Built-in names are taken before a source's tools arrive: they come back as collisions.
    await this.builtins.ensure(req.org_id);
    const staged = req.staged ? { orgId: req.org_id, sourceId: req.source_id, syncId: req.staged.sync_id } : undefined;
    const desired = dedupe([...(staged ? await this.stagedTools(staged, req.staged!.pages) : []), ...req.tools]);
    const keep = new Set(req.keep ?? []);
    const reply = await this.tools.inExternalSource(
      req.org_id,
      req.tool_type,
      req.source_id,
      [...desired.keys()],
      async ({ owned, named }, w, m) => {
        const out: Reply = {
          added: [],
          updated: [],
          removed: [],
          unchanged: 0,
          kept: 0,
          detached: 0,
          detachments: [],
          collisions: [],
        };
        const ownedByName = new Map(owned.map((t) => [t.name, t]));
        const inserts: Array<ToolFields & { name: string }> = [];
        const updated: ToolEntity[] = [];
        for (const [name, input] of desired) {
          const mine = ownedByName.get(name);
          if (mine) {
            if (sameContent(mine, input)) out.unchanged += 1;
            else {
              updated.push(await w.update(mine.id, fieldsOf(input)));
              out.updated.push(name);
            }
            continue;
          }
          const other = named.find((t) => t.name === name);
          if (other) {
            out.collisions.push({
              name,
              existing_tool_id: other.id,
              existing_tool_type: other.toolType,
              reason:
                other.toolType === req.tool_type
                  ? 'the name belongs to a tool of another server'
                  : `the name belongs to a ${other.toolType} tool`,
            });
            continue;
          }
          inserts.push({
            ...fieldsOf(input),
            name,
            returnCharLimit: DEFAULT_RETURN_CHAR_LIMIT,
            enableParallelExecution: false,
          });
        }
        const added = await w.insert(inserts);
        out.added.push(...added.map((t) => t.name));
        // Named in keep: still listed by the source, just not sent (too large); never removed for that.
        const missing = owned.filter((t) => !desired.has(t.name));
        out.kept = missing.filter((t) => keep.has(t.name)).length;
        const gone = req.complete ? missing.filter((t) => !keep.has(t.name)) : [];
        // A removed tool leaves every agent it was attached to (the report says which).
        const detachments = await this.toolSets.detachRemoved(
          m,
          req.org_id,
          gone.map((t) => t.id),
          'source_removed',
        );
        out.detached = detachments.length;
        out.detachments = detachments.slice(0, MAX_REPORTED_DETACHMENTS);
        await w.delete(gone.map((t) => t.id));
        out.removed.push(...gone.map((t) => t.name));
        await this.outbox.stage(m, [
          ...added.map((t) => toolEvent('created', t)),
          ...updated.map((t) => toolEvent('updated', t)),
          ...gone.map((t) => toolEvent('deleted', t)),
        ]);
        return out;
      },
    );
    if (reply.updated.length || reply.removed.length) this.toolSets.toolsChanged(req.org_id);
    await this.outbox.drain(req.org_id);
    if (staged) await this.pages.drop(staged);
    this.log.log(
      `external tools of ${req.source_id} in org ${req.org_id}: +${reply.added.length} ~${reply.updated.length} -${reply.removed.length} =${reply.unchanged} kept ${reply.kept} detached ${reply.detached} collisions ${reply.collisions.length}`,
    );
    return reply;
  }

  /** Every staged page 0..pages-1, or CONTRACT_VIOLATION naming the missing ones (nothing is applied). */
  private async stagedTools(ref: PageRef, pages: number): Promise<ExternalToolInput[]> {
    const rows = await this.pages.load(ref);
    const have = new Set(rows.map((r) => r.page));
    const missing = Array.from({ length: pages }, (_, i) => i).filter((i) => !have.has(i));
    if (missing.length || rows.length !== pages) {
      throw new ToolplaneError(
        ErrorCode.CONTRACT_VIOLATION,
        `Staged sync ${ref.syncId} is incomplete: ${missing.length ? `page(s) ${missing.slice(0, 10).join(', ')} missing` : 'unexpected pages'}`,
        {
          missing_pages: missing.slice(0, 100),
        },
      );
    }
    return rows.flatMap((r) => r.tools);
  }
}

/** The last occurrence of a name wins (a server listing one name twice). */
function dedupe(tools: ExternalToolInput[]): Map<string, ExternalToolInput> {
  return new Map(tools.map((t) => [t.name, t]));
}

function fieldsOf(input: ExternalToolInput): ToolFields {
  return {
    description: input.description,
    jsonSchema: input.json_schema,
    tags: input.tags,
    metadata: input.metadata_,
    sourceType: null,
    sourceCode: null,
  };
}

function sameContent(t: ToolEntity, input: ExternalToolInput): boolean {
  return (
    t.description === input.description &&
    JSON.stringify(t.jsonSchema) === JSON.stringify(input.json_schema) &&
    JSON.stringify(t.tags) === JSON.stringify(input.tags) &&
    JSON.stringify(t.metadata) === JSON.stringify(input.metadata_)
  );
}
