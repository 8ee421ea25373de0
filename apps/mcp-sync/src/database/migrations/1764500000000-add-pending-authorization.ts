import type { MigrationInterface, QueryRunner } from 'typeorm';

/** An OAuth server that needs a user to authorize it (again, or with more scope): the URL to open, until it is authorized. */
export class AddPendingAuthorization1764500000000 implements MigrationInterface {
  name = 'AddPendingAuthorization1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp.servers ADD COLUMN pending_authorization json NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp.servers DROP COLUMN pending_authorization`);
  }
}
