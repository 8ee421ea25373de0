// Values are stored only as AES-256-GCM envelopes (bytea) with the id of the key that sealed them.
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateCredentials1764000000000 implements MigrationInterface {
  name = 'CreateCredentials1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SCHEMA IF NOT EXISTS credentials`);
    await q.query(`
      CREATE TABLE credentials.secrets (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id text NOT NULL,
        scope text NOT NULL CHECK (scope IN ('sandbox', 'agent')),
        agent_id text NOT NULL DEFAULT '',
        provider text NOT NULL DEFAULT '' CHECK (provider IN ('', 'local', 'e2b', 'modal')),
        key text NOT NULL,
        description text,
        mask boolean NOT NULL DEFAULT true,
        key_id text NOT NULL,
        ciphertext bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT secrets_agent_scope CHECK ((scope = 'agent') = (agent_id <> '')),
        CONSTRAINT secrets_identity_unique UNIQUE (org_id, scope, agent_id, provider, key)
      )`);
    await q.query(`CREATE INDEX secrets_key_id_idx ON credentials.secrets (key_id)`);
    await q.query(`
      CREATE TABLE credentials.webhooks (
        org_id text PRIMARY KEY,
        url text NOT NULL,
        timeout_ms integer NOT NULL,
        fail_mode text NOT NULL CHECK (fail_mode IN ('open', 'closed')),
        cache_ttl_ms integer NOT NULL DEFAULT 0,
        key_id text NOT NULL,
        signing_secret bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE credentials.sandbox_configs (
        org_id text NOT NULL,
        provider text NOT NULL CHECK (provider IN ('local', 'e2b', 'modal')),
        config jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, provider)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE credentials.sandbox_configs`);
    await q.query(`DROP TABLE credentials.webhooks`);
    await q.query(`DROP TABLE credentials.secrets`);
  }
}
