import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { ToolEntity } from '../catalog/tool.entity';
import { builtinRow, builtinToolId, type BuiltinTool } from './builtin-tools';

type Row = ReturnType<typeof builtinRow>;

/** A built-in row's version, as SQL (0 for a row without one). */
const VERSION_OF = (t: string) => `COALESCE((${t}.metadata -> 'builtin' ->> 'version')::int, 0)`;

/**
 * The built-in rows of registry.tools. Every write moves a row only to a higher version and only
 * if it is a built-in of the same type: a tenant's own tool that held the name before built-ins
 * existed is never touched.
 */
@Injectable()
export class BuiltinToolsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * In one transaction: the org's built-ins inserted where missing, raised where older; `then`
   * gets the rows written (created or updated) and the names held by a tenant's own tool.
   */
  ensureOrg(
    orgId: string,
    tools: readonly BuiltinTool[],
    then: (written: Array<{ tool: ToolEntity; created: boolean }>, m: EntityManager) => Promise<void>,
  ): Promise<{ written: number; shadowed: string[] }> {
    return this.ds.transaction(async (m) => {
      const rows = tools.map(builtinRow);
      const params: unknown[] = [orgId];
      const values = rows.map((r) => {
        const at = (v: unknown) => `$${params.push(v)}`;
        return `(${[
          at(builtinToolId(orgId, r.name)),
          '$1',
          at(r.name),
          at(r.toolType),
          at(r.description),
          at(r.sourceType),
          `${at(JSON.stringify(r.jsonSchema))}::json`,
          `${at(r.tags)}::text[]`,
          at(r.returnCharLimit),
          at(r.enableParallelExecution),
          at(r.defaultRequiresApproval),
          `${at(JSON.stringify(r.metadata))}::json`,
        ].join(', ')})`;
      });
      const written: Array<{ id: string; created: boolean }> = await m.query(
        `INSERT INTO registry.tools AS t (id, org_id, name, tool_type, description, source_type, json_schema, tags, return_char_limit, enable_parallel_execution, default_requires_approval, metadata)
         VALUES ${values.join(',\n')}
         ON CONFLICT (org_id, name) DO UPDATE SET
           description = EXCLUDED.description, source_type = EXCLUDED.source_type, source_code = NULL, json_schema = EXCLUDED.json_schema,
           tags = EXCLUDED.tags, return_char_limit = EXCLUDED.return_char_limit, enable_parallel_execution = EXCLUDED.enable_parallel_execution,
           default_requires_approval = EXCLUDED.default_requires_approval, metadata = EXCLUDED.metadata, updated_at = now()
         WHERE t.tool_type = EXCLUDED.tool_type AND ${VERSION_OF('t')} < ${VERSION_OF('EXCLUDED')}
         RETURNING t.id, (xmax = 0) AS created`,
        params,
      );
      const shadowed: Array<{ name: string }> = await m.query(
        `SELECT name FROM registry.tools WHERE org_id = $1 AND name = ANY($2::text[]) AND NOT (id = ANY($3::text[]))`,
        [orgId, rows.map((r) => r.name), rows.map((r) => builtinToolId(orgId, r.name))],
      );
      if (written.length) {
        const entities = await m
          .getRepository(ToolEntity)
          .createQueryBuilder('t')
          .where('t.id = ANY(:ids)', { ids: written.map((w) => w.id) })
          .orderBy('t.seq', 'ASC')
          .getMany();
        const created = new Map(written.map((w) => [w.id, w.created]));
        await then(
          entities.map((tool) => ({ tool, created: created.get(tool.id) === true })),
          m,
        );
      }
      return { written: written.length, shadowed: shadowed.map((s) => s.name) };
    });
  }

  /**
   * Every org's row of this built-in that is older than `row` raised to it, in one transaction
   * with `then` (the events). Idempotent: a second replica running it finds nothing older.
   */
  upgradeAll(row: Row, then: (updated: ToolEntity[], m: EntityManager) => Promise<void>): Promise<ToolEntity[]> {
    return this.ds.transaction(async (m) => {
      const updated: Array<{ id: string }> = await m
        .query(
          `UPDATE registry.tools AS t SET description = $3, source_type = $4, source_code = NULL, json_schema = $5::json, tags = $6::text[],
             return_char_limit = $7, enable_parallel_execution = $8, default_requires_approval = $9, metadata = $10::json, updated_at = now()
           WHERE t.name = $1 AND t.tool_type = $2 AND ${VERSION_OF('t')} < $11
           RETURNING t.id`,
          [
            row.name,
            row.toolType,
            row.description,
            row.sourceType,
            JSON.stringify(row.jsonSchema),
            row.tags,
            row.returnCharLimit,
            row.enableParallelExecution,
            row.defaultRequiresApproval,
            JSON.stringify(row.metadata),
            row.metadata.builtin.version,
          ],
        )
        .then(returned<{ id: string }>);
      if (!updated.length) return [];
      const entities = await m
        .getRepository(ToolEntity)
        .createQueryBuilder('t')
        .where('t.id = ANY(:ids)', { ids: updated.map((u) => u.id) })
        .getMany();
      await then(entities, m);
      return entities;
    });
  }
}

/** The rows of an UPDATE … RETURNING: TypeORM's Postgres driver answers `[rows, affected]` for UPDATE and DELETE. */
function returned<T>(result: unknown): T[] {
  return Array.isArray(result) && Array.isArray(result[0]) ? (result[0] as T[]) : (result as T[]);
}
