// End users' own OAuth tokens (connected accounts of `account: "user"` MCP servers): one sealed
// record per (org, server, user, issuer); user_id '' is the org's record. What connections.list
// shows without opening a record (scope, times) is kept beside it; the tokens stay sealed.
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AddOAuthTokenUsers1764700000000 implements MigrationInterface {
  name = 'AddOAuthTokenUsers1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD COLUMN user_id text NOT NULL DEFAULT ''`);
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD COLUMN scope text`);
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD COLUMN expires_at timestamptz`);
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD COLUMN created_at timestamptz NOT NULL DEFAULT now()`);
    await q.query(`ALTER TABLE credentials.oauth_tokens DROP CONSTRAINT oauth_tokens_pkey`);
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD PRIMARY KEY (org_id, server_id, user_id, issuer)`);
    await q.query(`CREATE INDEX oauth_tokens_org_user_idx ON credentials.oauth_tokens (org_id, user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM credentials.oauth_tokens WHERE user_id <> ''`);
    await q.query(`DROP INDEX credentials.oauth_tokens_org_user_idx`);
    await q.query(`ALTER TABLE credentials.oauth_tokens DROP CONSTRAINT oauth_tokens_pkey`);
    await q.query(`ALTER TABLE credentials.oauth_tokens ADD PRIMARY KEY (org_id, server_id, issuer)`);
    await q.query(
      `ALTER TABLE credentials.oauth_tokens DROP COLUMN user_id, DROP COLUMN scope, DROP COLUMN expires_at, DROP COLUMN created_at`,
    );
  }
}
