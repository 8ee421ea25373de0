import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Pending OAuth authorization-code adds: the server settings and the PKCE verifier, sealed, until the code comes back. */
export class CreateOAuthAuthorizations1764300000000 implements MigrationInterface {
  name = 'CreateOAuthAuthorizations1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mcp.oauth_authorizations (
        state text PRIMARY KEY,
        org_id text NOT NULL,
        server_id text NOT NULL,
        server_name text NOT NULL,
        sealed bytea NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX oauth_authorizations_expires_idx ON mcp.oauth_authorizations (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE mcp.oauth_authorizations`);
  }
}
