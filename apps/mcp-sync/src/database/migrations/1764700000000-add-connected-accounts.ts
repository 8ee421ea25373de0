import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Connected accounts: a server says whose account it acts as (`account`, shown by servers.get), and
 * a pending authorization of an `account: "user"` server is one end user's: only that user may complete it.
 */
export class AddConnectedAccounts1764700000000 implements MigrationInterface {
  name = 'AddConnectedAccounts1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp.oauth_authorizations ADD COLUMN user_id text NULL`);
    await q.query(`ALTER TABLE mcp.servers ADD COLUMN account text NOT NULL DEFAULT 'org'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mcp.servers DROP COLUMN account`);
    await q.query(`ALTER TABLE mcp.oauth_authorizations DROP COLUMN user_id`);
  }
}
