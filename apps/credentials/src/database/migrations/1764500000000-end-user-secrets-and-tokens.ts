// End users in credentials: secrets of one end user (scope 'user', keyed by user_id, sealed like
// every secret: the user id is part of the value's associated data) and tokens bound to one.
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class EndUserSecretsAndTokens1764500000000 implements MigrationInterface {
  name = 'EndUserSecretsAndTokens1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE credentials.secrets ADD COLUMN user_id text NOT NULL DEFAULT ''`);
    await q.query(`ALTER TABLE credentials.secrets DROP CONSTRAINT secrets_scope_check`);
    await q.query(
      `ALTER TABLE credentials.secrets ADD CONSTRAINT secrets_scope_check CHECK (scope IN ('sandbox', 'agent', 'user'))`,
    );
    await q.query(
      `ALTER TABLE credentials.secrets ADD CONSTRAINT secrets_user_scope CHECK ((scope = 'user') = (user_id <> ''))`,
    );
    // The identity gains the user; (org, scope, agent, user) leads, so a call's lookup of one user's secrets is an index range.
    await q.query(`ALTER TABLE credentials.secrets DROP CONSTRAINT secrets_identity_unique`);
    await q.query(
      `ALTER TABLE credentials.secrets ADD CONSTRAINT secrets_identity_unique UNIQUE (org_id, scope, agent_id, user_id, provider, key)`,
    );
    await q.query(`ALTER TABLE credentials.auth_tokens ADD COLUMN user_id text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE credentials.auth_tokens DROP COLUMN user_id`);
    await q.query(`DELETE FROM credentials.secrets WHERE scope = 'user'`);
    await q.query(`ALTER TABLE credentials.secrets DROP CONSTRAINT secrets_identity_unique`);
    await q.query(
      `ALTER TABLE credentials.secrets ADD CONSTRAINT secrets_identity_unique UNIQUE (org_id, scope, agent_id, provider, key)`,
    );
    await q.query(`ALTER TABLE credentials.secrets DROP CONSTRAINT secrets_user_scope`);
    await q.query(`ALTER TABLE credentials.secrets DROP CONSTRAINT secrets_scope_check`);
    await q.query(
      `ALTER TABLE credentials.secrets ADD CONSTRAINT secrets_scope_check CHECK (scope IN ('sandbox', 'agent'))`,
    );
    await q.query(`ALTER TABLE credentials.secrets DROP COLUMN user_id`);
  }
}
