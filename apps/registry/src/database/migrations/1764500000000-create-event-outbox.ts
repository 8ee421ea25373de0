import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Tool events written in the same transaction as the change they describe (transactional outbox). */
export class CreateEventOutbox1764500000000 implements MigrationInterface {
  name = 'CreateEventOutbox1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE registry.event_outbox (
        seq bigserial PRIMARY KEY,
        event_id uuid NOT NULL UNIQUE,
        org_id text NOT NULL,
        -- the subject prefix (SUBJECT_PREFIX) of the deployment that staged it: only it publishes it
        prefix text NOT NULL,
        subject text NOT NULL,
        payload jsonb NOT NULL,
        trace jsonb NOT NULL DEFAULT '{}'::jsonb,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX event_outbox_org_seq_idx ON registry.event_outbox (prefix, org_id, seq)`);
    await q.query(`CREATE INDEX event_outbox_created_idx ON registry.event_outbox (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry.event_outbox`);
  }
}
