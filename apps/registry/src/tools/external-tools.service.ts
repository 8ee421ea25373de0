import { Injectable, Logger } from '@nestjs/common';
import {
  DEFAULT_RETURN_CHAR_LIMIT,
  ToolCreated,
  ToolDeleted,
  ToolUpdated,
  type ExternalToolInput,
  type ExternalToolsSync,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import type { ToolEntity } from './tool.entity';
import { toWireTool } from './tool.mapper';
import { ToolsRepository, type ToolFields } from './tools.repository';

type Reply = ReplyOf<typeof ExternalToolsSync>;
const PUBLISH_CONCURRENCY = 64;

/**
 * Applies an external source's full tool set (an MCP server's) in one transaction: new names are
 * added, changed ones updated, and — when the listing was complete — the source's tools missing
 * from it removed. A name held by a custom tool or by another source's tool is never overwritten:
 * it comes back as a collision. Tool events are published inside the transaction, as for upserts.
 */
@Injectable()
export class ExternalToolsService {
  private readonly log = new Logger(ExternalToolsService.name);

  constructor(
    private readonly tools: ToolsRepository,
    private readonly messaging: MessagingClient,
  ) {}

  async sync(req: RequestOf<typeof ExternalToolsSync>): Promise<Reply> {
    const desired = dedupe(req.tools);
    const reply = await this.tools.inExternalSource(req.org_id, req.tool_type, req.source_id, [...desired.keys()], async ({ owned, named }, w) => {
      const out: Reply = { added: [], updated: [], removed: [], unchanged: 0, collisions: [] };
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
            reason: other.toolType === req.tool_type ? 'the name belongs to a tool of another server' : `the name belongs to a ${other.toolType} tool`,
          });
          continue;
        }
        inserts.push({ ...fieldsOf(input), name, returnCharLimit: DEFAULT_RETURN_CHAR_LIMIT, enableParallelExecution: false });
      }
      const added = await w.insert(inserts);
      out.added.push(...added.map((t) => t.name));
      const gone = req.complete ? owned.filter((t) => !desired.has(t.name)) : [];
      await w.delete(gone.map((t) => t.id));
      out.removed.push(...gone.map((t) => t.name));
      await this.publishAll([
        ...added.map((t) => () => this.publish('created', t)),
        ...updated.map((t) => () => this.publish('updated', t)),
        ...gone.map((t) => () => this.publish('deleted', t)),
      ]);
      return out;
    });
    this.log.log(
      `external tools of ${req.source_id} in org ${req.org_id}: +${reply.added.length} ~${reply.updated.length} -${reply.removed.length} =${reply.unchanged} collisions ${reply.collisions.length}`,
    );
    return reply;
  }

  private async publishAll(jobs: Array<() => Promise<void>>): Promise<void> {
    for (let i = 0; i < jobs.length; i += PUBLISH_CONCURRENCY) await Promise.all(jobs.slice(i, i + PUBLISH_CONCURRENCY).map((j) => j()));
  }

  private async publish(kind: 'created' | 'updated' | 'deleted', t: ToolEntity): Promise<void> {
    const eventId = randomUUID();
    const base = { event_id: eventId, occurred_at: new Date().toISOString(), org_id: t.orgId, tool_id: t.id, tool_name: t.name };
    if (kind === 'deleted') return this.messaging.publish(ToolDeleted, base, eventId);
    return this.messaging.publish(kind === 'created' ? ToolCreated : ToolUpdated, { ...base, tool: toWireTool(t) }, eventId);
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
