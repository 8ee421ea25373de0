import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import { ToolEntity } from '../catalog/tool.entity';

export type ToolFields = Partial<Omit<ToolEntity, 'seq' | 'id' | 'orgId' | 'createdAt' | 'updatedAt'>>;
export interface ListFilter {
  tags?: string[];
  toolTypes?: string[];
  /** Types left out (when `toolTypes` does not name them). */
  excludeToolTypes?: string[];
  afterSeq?: string;
  limit: number;
}

const UNIQUE_VIOLATION = '23505';

/** Writes inside one external-source transaction (see `inExternalSource`). */
export interface ExternalSourceWriter {
  insert(rows: Array<ToolFields & { name: string }>): Promise<ToolEntity[]>;
  update(id: string, fields: ToolFields): Promise<ToolEntity>;
  delete(ids: string[]): Promise<void>;
}

@Injectable()
export class ToolsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  findById(orgId: string, id: string): Promise<ToolEntity | null> {
    return this.ds.getRepository(ToolEntity).findOneBy({ orgId, id });
  }

  findByName(orgId: string, name: string): Promise<ToolEntity | null> {
    return this.ds.getRepository(ToolEntity).findOneBy({ orgId, name });
  }

  /** One page ordered by insertion; `afterSeq` is the last seq of the previous page. */
  list(orgId: string, f: ListFilter): Promise<ToolEntity[]> {
    const qb = this.ds.getRepository(ToolEntity).createQueryBuilder('t').where('t.org_id = :orgId', { orgId });
    if (f.tags?.length) qb.andWhere('t.tags && :tags::text[]', { tags: f.tags });
    if (f.toolTypes?.length) qb.andWhere('t.tool_type IN (:...types)', { types: f.toolTypes });
    if (f.excludeToolTypes?.length) qb.andWhere('t.tool_type NOT IN (:...excluded)', { excluded: f.excludeToolTypes });
    if (f.afterSeq) qb.andWhere('t.seq > :after', { after: f.afterSeq });
    return qb.orderBy('t.seq', 'ASC').limit(f.limit).getMany();
  }

  /**
   * Insert the tool, or update the org's tool of that name, in one transaction that also runs
   * `afterWrite` (staging the event in the outbox): if it fails, nothing is stored.
   */
  async upsertByName(
    orgId: string,
    name: string,
    onCreate: ToolFields,
    onUpdate: ToolFields,
    afterWrite: (tool: ToolEntity, created: boolean, m: EntityManager) => Promise<void>,
    /** Runs on the locked existing row before the update; throws to refuse it. */
    checkExisting?: (existing: ToolEntity) => void,
  ): Promise<{ tool: ToolEntity; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.ds.transaction(async (m) => {
          const existing = await m
            .getRepository(ToolEntity)
            .createQueryBuilder('t')
            .setLock('pessimistic_write')
            .where('t.org_id = :orgId AND t.name = :name', { orgId, name })
            .getOne();
          let id: string;
          if (existing) {
            checkExisting?.(existing);
            id = existing.id;
            await m
              .getRepository(ToolEntity)
              .update({ id }, { ...onUpdate, updatedAt: () => 'now()' } as QueryDeepPartialEntity<ToolEntity>);
          } else {
            id = `tool-${randomUUID()}`;
            await m
              .getRepository(ToolEntity)
              .insert({ ...onCreate, id, orgId, name } as QueryDeepPartialEntity<ToolEntity>);
          }
          const tool = await m.getRepository(ToolEntity).findOneByOrFail({ id });
          await afterWrite(tool, !existing, m);
          return { tool, created: !existing };
        });
      } catch (e) {
        // Two first upserts of one name raced: the loser retries and updates.
        if (attempt < 2 && (e as { code?: string }).code === UNIQUE_VIOLATION) continue;
        throw e;
      }
    }
  }

  /**
   * One transaction for an external source's tool set (e.g. an MCP server's), serialized per
   * source: `fn` sees the tools the source owns (metadata.<kind>.server_id) and every tool of the
   * org holding one of `names`, and writes through `w`. Anything `fn` throws rolls it all back.
   */
  inExternalSource<T>(
    orgId: string,
    toolType: string,
    sourceId: string,
    names: string[],
    fn: (
      current: { owned: ToolEntity[]; named: ToolEntity[] },
      w: ExternalSourceWriter,
      m: EntityManager,
    ) => Promise<T>,
  ): Promise<T> {
    return this.ds.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`registry.external.${orgId}.${sourceId}`]);
      const repo = m.getRepository(ToolEntity);
      const owned = await repo
        .createQueryBuilder('t')
        .setLock('pessimistic_write')
        .where("t.org_id = :orgId AND t.tool_type = :toolType AND (t.metadata -> 'mcp' ->> 'server_id') = :sourceId", {
          orgId,
          toolType,
          sourceId,
        })
        .getMany();
      const named = names.length
        ? await repo
            .createQueryBuilder('t')
            .setLock('pessimistic_write')
            .where('t.org_id = :orgId AND t.name = ANY(:names)', { orgId, names })
            .getMany()
        : [];
      const w: ExternalSourceWriter = {
        insert: async (rows) => {
          if (!rows.length) return [];
          const withIds = rows.map((r) => ({ ...r, id: `tool-${randomUUID()}`, orgId, toolType }));
          for (let i = 0; i < withIds.length; i += 500)
            await repo.insert(withIds.slice(i, i + 500) as QueryDeepPartialEntity<ToolEntity>[]);
          return repo
            .createQueryBuilder('t')
            .where('t.id IN (:...ids)', { ids: withIds.map((r) => r.id) })
            .orderBy('t.seq', 'ASC')
            .getMany();
        },
        update: async (id, fields) => {
          await repo.update({ id }, { ...fields, updatedAt: () => 'now()' } as QueryDeepPartialEntity<ToolEntity>);
          return repo.findOneByOrFail({ id });
        },
        delete: async (ids) => {
          if (ids.length)
            await repo.createQueryBuilder().delete().from(ToolEntity).where('id IN (:...ids)', { ids }).execute();
        },
      };
      return fn({ owned, named }, w, m);
    });
  }

  /**
   * Delete in one transaction with `beforeDelete` (run on the locked row: detaching it, staging
   * the events); null when the org has no such tool.
   */
  deleteById(
    orgId: string,
    id: string,
    beforeDelete: (tool: ToolEntity, m: EntityManager) => Promise<void>,
  ): Promise<ToolEntity | null> {
    return this.ds.transaction(async (m: EntityManager) => {
      const tool = await m
        .getRepository(ToolEntity)
        .createQueryBuilder('t')
        .setLock('pessimistic_write')
        .where('t.org_id = :orgId AND t.id = :id', { orgId, id })
        .getOne();
      if (!tool) return null;
      await beforeDelete(tool, m);
      await m.getRepository(ToolEntity).delete({ id });
      return tool;
    });
  }
}
