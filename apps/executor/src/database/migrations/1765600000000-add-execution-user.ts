import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The end user of each execution (the request's user_id; null when it named none), and an index
 * for executions.list by end user: (org_id, user_id), newest first, in the list's keyset order.
 *
 * Outside a transaction: executor.executions takes a write on every call, and a plain CREATE INDEX
 * would block those writes for as long as it builds; CONCURRENTLY does not, but cannot run in a
 * transaction. A build that failed leaves an invalid index behind: it is dropped before building.
 */
export class AddExecutionUser1765600000000 implements MigrationInterface {
  name = 'AddExecutionUser1765600000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE executor.executions ADD COLUMN IF NOT EXISTS user_id text NULL`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS executor.executions_org_user_idx`);
    await q.query(
      `CREATE INDEX CONCURRENTLY executions_org_user_idx ON executor.executions (org_id, user_id, created_at DESC, execution_id DESC) WHERE user_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS executor.executions_org_user_idx`);
    await q.query(`ALTER TABLE executor.executions DROP COLUMN IF EXISTS user_id`);
  }
}
