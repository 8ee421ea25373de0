// json (not jsonb) keeps the key order callers gave, e.g. a schema's properties.
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateTools1763880000000 implements MigrationInterface {
  name = 'CreateTools1763880000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SCHEMA IF NOT EXISTS registry`);
    await q.query(`
      CREATE TABLE registry.tools (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text PRIMARY KEY CHECK (id ~ '^tool-[0-9a-f-]{36}$'),
        org_id text NOT NULL,
        name text NOT NULL,
        tool_type text NOT NULL,
        description text,
        source_type text,
        source_code text,
        json_schema json,
        args_json_schema json,
        tags text[] NOT NULL DEFAULT '{}',
        return_char_limit integer NOT NULL DEFAULT 50000 CHECK (return_char_limit BETWEEN 1 AND 1000000),
        pip_requirements json,
        npm_requirements json,
        default_requires_approval boolean,
        enable_parallel_execution boolean DEFAULT false,
        created_by_id text,
        last_updated_by_id text,
        metadata json,
        project_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT tools_org_name_unique UNIQUE (org_id, name)
      )`);
    await q.query(`CREATE UNIQUE INDEX tools_org_seq_idx ON registry.tools (org_id, seq)`);
    await q.query(`CREATE INDEX tools_tags_idx ON registry.tools USING gin (tags)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry.tools`);
  }
}
