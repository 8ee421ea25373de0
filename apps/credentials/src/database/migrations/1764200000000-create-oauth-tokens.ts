// MCP servers' OAuth tokens, one sealed record per (org, server, issuer).
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateOAuthTokens1764200000000 implements MigrationInterface {
  name = 'CreateOAuthTokens1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE credentials.oauth_tokens (
        org_id text NOT NULL,
        server_id text NOT NULL,
        issuer text NOT NULL,
        key_id text NOT NULL,
        ciphertext bytea NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, server_id, issuer)
      )`);
    await q.query(`CREATE INDEX oauth_tokens_key_id_idx ON credentials.oauth_tokens (key_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE credentials.oauth_tokens`);
  }
}
