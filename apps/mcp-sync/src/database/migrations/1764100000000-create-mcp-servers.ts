import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateMcpServers1764100000000 implements MigrationInterface {
  name = 'CreateMcpServers1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SCHEMA IF NOT EXISTS mcp`);
    await q.query(`
      CREATE TABLE mcp.servers (
        id text PRIMARY KEY CHECK (id ~ '^mcp-[0-9a-f-]{36}$'),
        org_id text NOT NULL,
        name text NOT NULL,
        transport text NOT NULL CHECK (transport IN ('stdio', 'sse', 'streamable_http')),
        command text,
        args json NOT NULL DEFAULT '[]',
        url text,
        tool_prefix text,
        -- AES-256-GCM over {env, headers, auth}: every value that may hold a secret.
        sealed_secrets bytea,
        env_keys text[] NOT NULL DEFAULT '{}',
        header_names text[] NOT NULL DEFAULT '{}',
        auth_type text,
        tool_count integer NOT NULL DEFAULT 0,
        last_sync json,
        next_sync_at timestamptz NOT NULL DEFAULT now(),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT servers_org_name_unique UNIQUE (org_id, name)
      )`);
    await q.query(`CREATE INDEX servers_next_sync_idx ON mcp.servers (next_sync_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE mcp.servers`);
  }
}
