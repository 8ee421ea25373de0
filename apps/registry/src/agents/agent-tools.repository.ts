import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { AgentToolDetachment } from '@toolplane/contracts';
import { DataSource, type EntityManager } from 'typeorm';
import { ToolEntity } from '../catalog/tool.entity';

/** The transaction a tool writer runs in (what its repository hands to the callbacks it takes). */
export type Transaction = EntityManager;

export interface ToolRefs {
  ids?: string[];
  names?: string[];
}

/** An attachment with its tool. */
export interface Attachment {
  seq: string;
  tool: ToolEntity;
  /** The agent's override; null: the tool's default applies. */
  requiresApproval: boolean | null;
  attachedAt: Date;
}

/** What a definitions build reads of each attached tool, in attachment order. */
export interface DefinitionRow {
  tool_id: string;
  name: string;
  description: string | null;
  tool_type: string;
  json_schema: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
}

interface AttachmentRow {
  seq: string;
  tool_id: string;
  requires_approval: boolean | null;
  created_at: Date;
}

/** The registry.agent_tools table: one row per (org, agent, tool). */
@Injectable()
export class AgentToolsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * In one transaction: the org's tools named by `refs` (locked against deletion until commit),
   * then `fn` with them. `fn` sees only this org's tools: another org's id is simply not found.
   */
  withTools<T>(orgId: string, refs: ToolRefs, fn: (tools: ToolEntity[], m: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      const qb = m
        .getRepository(ToolEntity)
        .createQueryBuilder('t')
        .setLock('for_key_share')
        .where('t.org_id = :orgId', { orgId });
      if (refs.ids) qb.andWhere('t.id = ANY(:ids)', { ids: refs.ids });
      else qb.andWhere('t.name = ANY(:names)', { names: refs.names ?? [] });
      return fn(await qb.getMany(), m);
    });
  }

  /**
   * Attaches the tools (inside `withTools`, whose lock keeps them from being deleted meanwhile). `requiresApproval` undefined: an attached tool is left
   * as it is; a value (or null) is set on every one of them. Returns the tool ids whose row was
   * added or changed.
   */
  async attach(
    m: EntityManager,
    orgId: string,
    agentId: string,
    toolIds: string[],
    requiresApproval: boolean | null | undefined,
  ): Promise<{ added: string[]; changed: string[] }> {
    if (!toolIds.length) return { added: [], changed: [] };
    const set = requiresApproval !== undefined;
    const rows: Array<{ tool_id: string; added: boolean }> = await m.query(
      `INSERT INTO registry.agent_tools (org_id, agent_id, tool_id, requires_approval)
         SELECT $1, $2, tool_id, $4::boolean FROM unnest($3::text[]) WITH ORDINALITY AS r(tool_id, n) ORDER BY n
         ON CONFLICT (org_id, agent_id, tool_id) DO ${
           set
             ? `UPDATE SET requires_approval = EXCLUDED.requires_approval, updated_at = now()
                WHERE registry.agent_tools.requires_approval IS DISTINCT FROM EXCLUDED.requires_approval`
             : 'NOTHING'
         }
         RETURNING tool_id, (xmax = 0) AS added`,
      [orgId, agentId, toolIds, set ? requiresApproval : null],
    );
    return {
      added: rows.filter((r) => r.added).map((r) => r.tool_id),
      changed: rows.filter((r) => !r.added).map((r) => r.tool_id),
    };
  }

  /** The agent's attachments of these tools, with their tools. */
  async findMany(m: EntityManager, orgId: string, agentId: string, toolIds: string[]): Promise<Attachment[]> {
    const rows: AttachmentRow[] = await m.query(
      `SELECT seq, tool_id, requires_approval, created_at FROM registry.agent_tools WHERE org_id = $1 AND agent_id = $2 AND tool_id = ANY($3::text[])`,
      [orgId, agentId, toolIds],
    );
    return this.withToolsOf(m, orgId, rows);
  }

  /** One page of the agent's attachments in attachment order; `afterSeq` is the last seq of the previous page. */
  async page(orgId: string, agentId: string, afterSeq: string | undefined, limit: number): Promise<Attachment[]> {
    const rows: AttachmentRow[] = await this.ds.query(
      `SELECT seq, tool_id, requires_approval, created_at FROM registry.agent_tools
       WHERE org_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
      [orgId, agentId, afterSeq ?? '0', limit],
    );
    return this.withToolsOf(this.ds.manager, orgId, rows);
  }

  /** Detaches the agent's tools named by `refs`; returns what was attached. */
  async detach(
    orgId: string,
    agentId: string,
    refs: ToolRefs,
    inTransaction: (detached: Array<{ tool_id: string; name: string }>, m: EntityManager) => Promise<void>,
  ): Promise<Array<{ tool_id: string; name: string }>> {
    return this.ds.transaction(async (m) => {
      const byName = !refs.ids;
      const detached = returned<{ tool_id: string; name: string }>(
        await m.query(
          `DELETE FROM registry.agent_tools a USING registry.tools t
           WHERE a.org_id = $1 AND a.agent_id = $2 AND t.org_id = a.org_id AND t.id = a.tool_id AND ${byName ? 't.name' : 'a.tool_id'} = ANY($3::text[])
           RETURNING a.tool_id, t.name`,
          [orgId, agentId, refs.ids ?? refs.names ?? []],
        ),
      );
      await inTransaction(detached, m);
      return detached;
    });
  }

  /** Inside a tool removal's transaction, before the tools go: detaches them from every agent of the org. */
  async detachTools(m: EntityManager, orgId: string, toolIds: string[]): Promise<AgentToolDetachment[]> {
    if (!toolIds.length) return [];
    return returned<AgentToolDetachment>(
      await m.query(
        `DELETE FROM registry.agent_tools a USING registry.tools t
         WHERE a.org_id = $1 AND a.tool_id = ANY($2::text[]) AND t.org_id = a.org_id AND t.id = a.tool_id
         RETURNING a.agent_id, a.tool_id, t.name`,
        [orgId, toolIds],
      ),
    );
  }

  /** What a definitions build needs of the agent's tools, in attachment order. */
  definitionRows(orgId: string, agentId: string): Promise<DefinitionRow[]> {
    return this.ds.query(
      `SELECT t.id AS tool_id, t.name, t.description, t.tool_type, t.json_schema, t.metadata
       FROM registry.agent_tools a JOIN registry.tools t ON t.org_id = a.org_id AND t.id = a.tool_id
       WHERE a.org_id = $1 AND a.agent_id = $2 ORDER BY a.seq`,
      [orgId, agentId],
    );
  }

  private async withToolsOf(m: EntityManager, orgId: string, rows: AttachmentRow[]): Promise<Attachment[]> {
    if (!rows.length) return [];
    const tools = await m
      .getRepository(ToolEntity)
      .createQueryBuilder('t')
      .where('t.org_id = :orgId AND t.id = ANY(:ids)', { orgId, ids: rows.map((r) => r.tool_id) })
      .getMany();
    const byId = new Map(tools.map((t) => [t.id, t]));
    return rows
      .filter((r) => byId.has(r.tool_id))
      .map((r) => ({
        seq: String(r.seq),
        tool: byId.get(r.tool_id)!,
        requiresApproval: r.requires_approval,
        attachedAt: r.created_at,
      }));
  }
}

/** The rows of a DELETE … RETURNING: TypeORM's Postgres driver answers `[rows, affected]` for DELETE and UPDATE. */
function returned<T>(result: unknown): T[] {
  return Array.isArray(result) && Array.isArray(result[0]) ? (result[0] as T[]) : (result as T[]);
}
