import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import { ToolEntity } from '../catalog/tool.entity';
import { ToolsetEntity } from '../catalog/toolset.entity';

/** A toolset's definition: everything an upsert replaces. */
export interface ToolsetDefinition {
  description: string | null;
  instructions: string | null;
  toolIds: string[];
  toolNames: string[];
  tags: string[];
  requiresApproval: boolean | null;
}

/** What a set selects its members by (its stored tool ids, tool names and tags). */
export type Membership = Pick<ToolsetDefinition, 'toolIds' | 'toolNames' | 'tags'>;

/** Where a page of members starts: after this tool, in (name, id) order. */
export interface MemberKey {
  name: string;
  id: string;
}

/**
 * The registry.toolsets table, and its sets' members resolved against registry.tools. Member order
 * is (name, id) in byte order (COLLATE "C"): the same on every database, whatever its locale.
 */
@Injectable()
export class ToolsetsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  findByName(orgId: string, name: string): Promise<ToolsetEntity | null> {
    return this.ds.getRepository(ToolsetEntity).findOneBy({ orgId, name });
  }

  /** One page of the org's sets, oldest first; `afterSeq` is the last seq of the previous page. */
  page(orgId: string, afterSeq: string | undefined, limit: number): Promise<ToolsetEntity[]> {
    const qb = this.ds.getRepository(ToolsetEntity).createQueryBuilder('s').where('s.org_id = :orgId', { orgId });
    if (afterSeq) qb.andWhere('s.seq > :afterSeq', { afterSeq });
    return qb.orderBy('s.seq', 'ASC').limit(limit).getMany();
  }

  /**
   * In one transaction: `check` sees which of `refs` are tools of the org (it throws to refuse:
   * nothing is stored), then the set is inserted, or its definition replaced when it differs from
   * the stored one, and `afterWrite` runs (staging the event) only when something was written.
   * `changed` is false when the stored set already had this definition.
   */
  upsert(
    orgId: string,
    name: string,
    def: ToolsetDefinition,
    check: (found: { ids: Set<string>; names: Set<string> }) => void,
    afterWrite: (toolset: ToolsetEntity, created: boolean, m: EntityManager) => Promise<void>,
  ): Promise<{ toolset: ToolsetEntity; created: boolean; changed: boolean }> {
    return this.ds.transaction(async (m) => {
      const found: Array<{ id: string; name: string }> =
        def.toolIds.length || def.toolNames.length
          ? await m.query(
              `SELECT id, name FROM registry.tools WHERE org_id = $1 AND (id = ANY($2::text[]) OR name = ANY($3::text[]))`,
              [orgId, def.toolIds, def.toolNames],
            )
          : [];
      check({ ids: new Set(found.map((t) => t.id)), names: new Set(found.map((t) => t.name)) });
      // One statement, so two first upserts of a name cannot both insert; an identical definition writes nothing.
      const written: Array<{ id: string; created: boolean }> = await m.query(
        `INSERT INTO registry.toolsets (id, org_id, name, description, instructions, tool_ids, tool_names, tags, requires_approval)
         VALUES ($1, $2, $3, $4, $5, $6::text[], $7::text[], $8::text[], $9::boolean)
         ON CONFLICT (org_id, name) DO UPDATE SET
           description = EXCLUDED.description, instructions = EXCLUDED.instructions, tool_ids = EXCLUDED.tool_ids,
           tool_names = EXCLUDED.tool_names, tags = EXCLUDED.tags, requires_approval = EXCLUDED.requires_approval, updated_at = now()
         WHERE (registry.toolsets.description, registry.toolsets.instructions, registry.toolsets.tool_ids, registry.toolsets.tool_names,
                registry.toolsets.tags, registry.toolsets.requires_approval)
           IS DISTINCT FROM (EXCLUDED.description, EXCLUDED.instructions, EXCLUDED.tool_ids, EXCLUDED.tool_names, EXCLUDED.tags, EXCLUDED.requires_approval)
         RETURNING id, (xmax = 0) AS created`,
        [
          `toolset-${randomUUID()}`,
          orgId,
          name,
          def.description,
          def.instructions,
          def.toolIds,
          def.toolNames,
          def.tags,
          def.requiresApproval,
        ],
      );
      const toolset = await m.getRepository(ToolsetEntity).findOneByOrFail({ orgId, name });
      const row = written[0];
      if (row) await afterWrite(toolset, row.created, m);
      return { toolset, created: row?.created ?? false, changed: Boolean(row) };
    });
  }

  /** Deletes the org's set of that name in one transaction with `beforeDelete` (run on the locked row); null when there is none. */
  deleteByName(
    orgId: string,
    name: string,
    beforeDelete: (toolset: ToolsetEntity, m: EntityManager) => Promise<void>,
  ): Promise<ToolsetEntity | null> {
    return this.ds.transaction(async (m) => {
      const toolset = await m
        .getRepository(ToolsetEntity)
        .createQueryBuilder('s')
        .setLock('pessimistic_write')
        .where('s.org_id = :orgId AND s.name = :name', { orgId, name })
        .getOne();
      if (!toolset) return null;
      await beforeDelete(toolset, m);
      await m.getRepository(ToolsetEntity).delete({ id: toolset.id });
      return toolset;
    });
  }

  /** One page of the org's tools that are members now (by id, by name or by tag), in (name, id) order after `after`. */
  members(orgId: string, set: Membership, after: MemberKey | undefined, limit: number): Promise<ToolEntity[]> {
    const qb = this.ds
      .getRepository(ToolEntity)
      .createQueryBuilder('t')
      .where('t.org_id = :orgId', { orgId })
      .andWhere('(t.id = ANY(:ids::text[]) OR t.name = ANY(:names::text[]) OR t.tags && :tags::text[])', {
        ids: set.toolIds,
        names: set.toolNames,
        tags: set.tags,
      });
    if (after)
      qb.andWhere('(t.name COLLATE "C", t.id COLLATE "C") > (:afterName, :afterId)', {
        afterName: after.name,
        afterId: after.id,
      });
    return qb.orderBy('t.name COLLATE "C"', 'ASC').addOrderBy('t.id COLLATE "C"', 'ASC').limit(limit).getMany();
  }
}
