// Org tokens (metadata only: the token itself is never stored) and what verifiers must refuse.
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAuthTokens1764300000000 implements MigrationInterface {
  name = 'CreateAuthTokens1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE credentials.auth_tokens (
        id text PRIMARY KEY,
        org_id text NULL,
        name text NOT NULL,
        scopes text[] NOT NULL,
        key_id text NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz NULL
      )`);
    await q.query(`CREATE INDEX auth_tokens_org_idx ON credentials.auth_tokens (org_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE credentials.auth_revocations (
        seq bigserial PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('token', 'org')),
        subject text NOT NULL,
        expires_at timestamptz NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (kind, subject)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE credentials.auth_revocations`);
    await q.query(`DROP TABLE credentials.auth_tokens`);
  }
}
