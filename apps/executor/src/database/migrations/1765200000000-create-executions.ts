import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Execution records (issue 16): one row per call; sealed payloads (call arguments while a call
 * waits, results for their retention); idempotency keys; live executor instances (claims); the
 * transactional outbox of execution events and async work (the shape of the registry's).
 */
export class CreateExecutions1765200000000 implements MigrationInterface {
  name = 'CreateExecutions1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE executor.sealed_payloads (
        payload_id uuid PRIMARY KEY,
        org_id text NOT NULL,
        -- sealed by the credentials service (purpose execution, bound to org and payload id)
        key_id text NOT NULL,
        blob text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX sealed_payloads_expires_idx ON executor.sealed_payloads (expires_at)`);
    await q.query(`
      CREATE TABLE executor.executions (
        execution_id text PRIMARY KEY,
        org_id text NOT NULL,
        agent_id text,
        tool_id text,
        tool_name text,
        provider text,
        status text NOT NULL,
        mode text NOT NULL DEFAULT 'sync',
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        duration_ms double precision,
        error_code text,
        trace_id text NOT NULL DEFAULT '',
        idempotency_key text,
        batch_id text,
        call_id text,
        -- sha256 of the tool id and the canonical args: what an idempotent retry must match
        args_hash text,
        -- the sealed call (args, per-call env) while it waits to run; dropped once it ran
        call_ref uuid REFERENCES executor.sealed_payloads (payload_id) ON DELETE SET NULL,
        -- the sealed result (one payload may hold several records' results: write-behind batches)
        result_ref uuid REFERENCES executor.sealed_payloads (payload_id) ON DELETE SET NULL,
        timeout_ms integer,
        -- the tool is declared idempotent (metadata_.idempotent): a run whose executor died may run again
        rerun_safe boolean NOT NULL DEFAULT false,
        -- the executor instance that claimed the run (status running)
        claimed_by uuid,
        attempts integer NOT NULL DEFAULT 0,
        -- pending_approval: when it expires
        expires_at timestamptz,
        -- queued: when it was last put on the work queue
        queued_at timestamptz
      )`);
    await q.query(
      `CREATE INDEX executions_org_created_idx ON executor.executions (org_id, created_at DESC, execution_id DESC)`,
    );
    await q.query(
      `CREATE INDEX executions_org_agent_idx ON executor.executions (org_id, agent_id, created_at DESC) WHERE agent_id IS NOT NULL`,
    );
    await q.query(`CREATE INDEX executions_org_tool_idx ON executor.executions (org_id, tool_id, created_at DESC)`);
    await q.query(
      `CREATE INDEX executions_pending_idx ON executor.executions (expires_at) WHERE status = 'pending_approval'`,
    );
    await q.query(`CREATE INDEX executions_running_idx ON executor.executions (claimed_by) WHERE status = 'running'`);
    await q.query(`CREATE INDEX executions_queued_idx ON executor.executions (queued_at) WHERE status = 'queued'`);
    await q.query(
      `CREATE INDEX executions_finished_idx ON executor.executions (finished_at) WHERE finished_at IS NOT NULL`,
    );
    await q.query(`CREATE INDEX executions_call_ref_idx ON executor.executions (call_ref) WHERE call_ref IS NOT NULL`);
    await q.query(
      `CREATE INDEX executions_result_ref_idx ON executor.executions (result_ref) WHERE result_ref IS NOT NULL`,
    );
    await q.query(`
      CREATE TABLE executor.idempotency_keys (
        org_id text NOT NULL,
        idempotency_key text NOT NULL,
        execution_id text NOT NULL,
        args_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (org_id, idempotency_key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_expires_idx ON executor.idempotency_keys (expires_at)`);
    await q.query(`
      CREATE TABLE executor.instances (
        instance_id uuid PRIMARY KEY,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE executor.event_outbox (
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
    await q.query(`CREATE INDEX event_outbox_org_seq_idx ON executor.event_outbox (prefix, org_id, seq)`);
    await q.query(`CREATE INDEX event_outbox_created_idx ON executor.event_outbox (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE executor.event_outbox`);
    await q.query(`DROP TABLE executor.instances`);
    await q.query(`DROP TABLE executor.idempotency_keys`);
    await q.query(`DROP TABLE executor.executions`);
    await q.query(`DROP TABLE executor.sealed_payloads`);
  }
}
