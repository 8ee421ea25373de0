import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The tool set each execution was called through (the request's toolset, e.g. the MCP gateway's
 * /mcp/toolsets/<name>; null when none), and an index for executions.list by tool set:
 * (org_id, toolset), newest first, in the list's keyset order.
 *
 * Outside a transaction, as AddExecutionUser: CREATE INDEX CONCURRENTLY does not block the writes
 * every call makes, but cannot run in a transaction; an invalid index a failed build left behind
 * is dropped before building.
 */
export class AddExecutionToolset1765700000000 implements MigrationInterface {
  name = 'AddExecutionToolset1765700000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE executor.executions ADD COLUMN IF NOT EXISTS toolset text NULL`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS executor.executions_org_toolset_idx`);
    await q.query(
      `CREATE INDEX CONCURRENTLY executions_org_toolset_idx ON executor.executions (org_id, toolset, created_at DESC, execution_id DESC) WHERE toolset IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS executor.executions_org_toolset_idx`);
    await q.query(`ALTER TABLE executor.executions DROP COLUMN IF EXISTS toolset`);
  }
}
