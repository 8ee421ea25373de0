import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Staged pages of external tool sets too large for one NATS message (begin/page/commit). */
export class CreateExternalToolPages1764400000000 implements MigrationInterface {
  name = 'CreateExternalToolPages1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE registry.external_tool_pages (
        sync_id uuid NOT NULL,
        page integer NOT NULL,
        org_id text NOT NULL,
        source_id text NOT NULL,
        tools jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (sync_id, page)
      )`);
    await q.query(`CREATE INDEX external_tool_pages_created_idx ON registry.external_tool_pages (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry.external_tool_pages`);
  }
}
