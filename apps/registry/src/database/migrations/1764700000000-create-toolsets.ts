import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Published tool sets: one row per (org, name). Members are not rows: a set names tool ids, tool
 * names and tags, resolved against registry.tools when read, so a tool made later with a listed
 * tag is a member and a deleted tool simply stops matching (no foreign key to keep).
 */
export class CreateToolsets1764700000000 implements MigrationInterface {
  name = 'CreateToolsets1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE registry.toolsets (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text PRIMARY KEY CHECK (id ~ '^toolset-[0-9a-f-]{36}$'),
        org_id text NOT NULL,
        name text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
        description text,
        instructions text,
        tool_ids text[] NOT NULL DEFAULT '{}',
        tool_names text[] NOT NULL DEFAULT '{}',
        tags text[] NOT NULL DEFAULT '{}',
        -- the set's override for calls made through it; null: each tool's default_requires_approval applies
        requires_approval boolean,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT toolsets_org_name_unique UNIQUE (org_id, name)
      )`);
    await q.query(`CREATE UNIQUE INDEX toolsets_org_seq_idx ON registry.toolsets (org_id, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry.toolsets`);
  }
}
