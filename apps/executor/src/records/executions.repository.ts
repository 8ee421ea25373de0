import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ExecutionState } from '@toolplane/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import type { SealedPayload } from './payload-sealer';

/** One row of executor.executions. */
export interface ExecutionRow {
  execution_id: string;
  org_id: string;
  agent_id: string | null;
  /** The end user the call was made for (the request's user_id). */
  user_id: string | null;
  /** The tool set the call was made through (the request's toolset). */
  toolset: string | null;
  tool_id: string | null;
  tool_name: string | null;
  provider: string | null;
  status: ExecutionState;
  mode: 'sync' | 'async';
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  duration_ms: number | null;
  error_code: string | null;
  trace_id: string;
  idempotency_key: string | null;
  batch_id: string | null;
  call_id: string | null;
  args_hash: string | null;
  call_ref: string | null;
  result_ref: string | null;
  timeout_ms: number | null;
  rerun_safe: boolean;
  claimed_by: string | null;
  attempts: number;
  expires_at: Date | null;
  queued_at: Date | null;
}

/** The columns a new record is written with (the others take their defaults). */
export type NewExecutionRow = Pick<ExecutionRow, 'execution_id' | 'org_id' | 'status'> &
  Partial<Omit<ExecutionRow, 'execution_id' | 'org_id' | 'status'>>;

const INSERT_COLUMNS = [
  'execution_id',
  'org_id',
  'agent_id',
  'user_id',
  'toolset',
  'tool_id',
  'tool_name',
  'provider',
  'status',
  'mode',
  'created_at',
  'started_at',
  'finished_at',
  'duration_ms',
  'error_code',
  'trace_id',
  'idempotency_key',
  'batch_id',
  'call_id',
  'args_hash',
  'call_ref',
  'result_ref',
  'timeout_ms',
  'rerun_safe',
  'claimed_by',
  'attempts',
  'expires_at',
  'queued_at',
] as const satisfies ReadonlyArray<keyof ExecutionRow>;
type Column = (typeof INSERT_COLUMNS)[number];

export interface ExecutionFilter {
  orgId: string;
  agentId?: string;
  userId?: string;
  toolset?: string;
  toolId?: string;
  status?: ExecutionState;
  /** Rows strictly older than this (created_at, execution_id), newest first. */
  before?: { createdAt: string; executionId: string };
  limit: number;
}

/** The only TypeORM user of the executor: named queries over executor.* (raw SQL, no entities). */
@Injectable()
export class ExecutionsRepository {
  constructor(@InjectDataSource() readonly ds: DataSource) {}

  transaction<T>(fn: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(fn);
  }

  async insertPayloads(m: EntityManager, payloads: readonly SealedPayload[], expiresAt: Date): Promise<void> {
    if (!payloads.length) return;
    const values: unknown[] = [];
    const rows = payloads.map((p, i) => {
      values.push(p.payloadId, p.orgId, p.keyId, p.blob, expiresAt);
      const b = i * 5;
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5})`;
    });
    await m.query(
      `INSERT INTO executor.sealed_payloads (payload_id, org_id, key_id, blob, expires_at) VALUES ${rows.join(', ')}`,
      values,
    );
  }

  async payload(orgId: string, payloadId: string): Promise<SealedPayload | undefined> {
    const rows: Array<{ payload_id: string; org_id: string; key_id: string; blob: string }> = await this.ds.query(
      'SELECT payload_id, org_id, key_id, blob FROM executor.sealed_payloads WHERE org_id = $1 AND payload_id = $2',
      [orgId, payloadId],
    );
    const r = rows[0];
    return r ? { payloadId: r.payload_id, orgId: r.org_id, keyId: r.key_id, blob: r.blob } : undefined;
  }

  async deletePayload(m: EntityManager, payloadId: string): Promise<void> {
    await m.query('DELETE FROM executor.sealed_payloads WHERE payload_id = $1', [payloadId]);
  }

  /**
   * Many records in one statement (write-behind batches), or one. `ifAbsent`: a record already
   * there is left as it is — a write-behind batch retried after a commit whose acknowledgement was
   * lost finds its own rows, and must not fail on them for ever.
   */
  async insert(
    m: EntityManager,
    records: readonly NewExecutionRow[],
    opts: { ifAbsent?: boolean } = {},
  ): Promise<void> {
    for (let i = 0; i < records.length; i += 200) {
      const chunk = records.slice(i, i + 200);
      const values: unknown[] = [];
      const rows = chunk.map((r) => {
        const cells = INSERT_COLUMNS.map((c) => {
          const v = r[c];
          if (v === undefined) return 'DEFAULT';
          values.push(v);
          return `$${values.length}`;
        });
        return `(${cells.join(', ')})`;
      });
      await m.query(
        `INSERT INTO executor.executions (${INSERT_COLUMNS.join(', ')}) VALUES ${rows.join(', ')}${opts.ifAbsent ? ' ON CONFLICT DO NOTHING' : ''}`,
        values,
      );
    }
  }

  async get(
    orgId: string,
    executionId: string,
    m: EntityManager | DataSource = this.ds,
  ): Promise<ExecutionRow | undefined> {
    const rows: ExecutionRow[] = await m.query(
      'SELECT * FROM executor.executions WHERE org_id = $1 AND execution_id = $2',
      [orgId, executionId],
    );
    return rows[0];
  }

  /** The record, locked for the rest of the transaction `m` (approve, deny, submit-result take their turn). */
  async getForUpdate(m: EntityManager, orgId: string, executionId: string): Promise<ExecutionRow | undefined> {
    const rows: ExecutionRow[] = await m.query(
      'SELECT * FROM executor.executions WHERE org_id = $1 AND execution_id = $2 FOR UPDATE',
      [orgId, executionId],
    );
    return rows[0];
  }

  async list(f: ExecutionFilter): Promise<ExecutionRow[]> {
    const where = ['org_id = $1'];
    const values: unknown[] = [f.orgId];
    const add = (sql: string, v: unknown) => {
      values.push(v);
      where.push(sql.replace('?', `$${values.length}`));
    };
    if (f.agentId) add('agent_id = ?', f.agentId);
    if (f.userId) add('user_id = ?', f.userId);
    if (f.toolset) add('toolset = ?', f.toolset);
    if (f.toolId) add('tool_id = ?', f.toolId);
    if (f.status) add('status = ?', f.status);
    if (f.before) {
      values.push(f.before.createdAt, f.before.executionId);
      where.push(`(created_at, execution_id) < ($${values.length - 1}::timestamptz, $${values.length})`);
    }
    values.push(f.limit);
    return this.ds.query(
      `SELECT * FROM executor.executions WHERE ${where.join(' AND ')} ORDER BY created_at DESC, execution_id DESC LIMIT $${values.length}`,
      values,
    );
  }

  /**
   * Moves a record from one of `from` to the values of `set`, atomically: the row as it is now, or
   * undefined when it was not in one of those states (someone else moved it first). `claimedBy`:
   * only while that executor still holds the claim.
   */
  async transition(
    m: EntityManager | DataSource,
    orgId: string,
    executionId: string,
    from: readonly ExecutionState[],
    set: Partial<Record<Column, unknown>> & { nowColumns?: ReadonlyArray<'started_at' | 'finished_at' | 'queued_at'> },
    claimedBy?: string,
  ): Promise<ExecutionRow | undefined> {
    const values: unknown[] = [orgId, executionId, from];
    const sets: string[] = [];
    for (const [k, v] of Object.entries(set)) {
      if (k === 'nowColumns' || v === undefined) continue;
      if (!(INSERT_COLUMNS as readonly string[]).includes(k)) throw new Error(`not a column: ${k}`);
      values.push(v);
      sets.push(`${k} = $${values.length}`);
    }
    for (const c of set.nowColumns ?? []) sets.push(`${c} = now()`);
    if (set.nowColumns?.includes('finished_at') && set.duration_ms === undefined)
      sets.push(
        'duration_ms = COALESCE(duration_ms, EXTRACT(EPOCH FROM (now() - COALESCE(started_at, created_at))) * 1000)',
      );
    let claim = '';
    if (claimedBy) {
      values.push(claimedBy);
      claim = ` AND claimed_by = $${values.length}`;
    }
    const res: unknown = await m.query(
      `UPDATE executor.executions SET ${sets.join(', ')} WHERE org_id = $1 AND execution_id = $2 AND status = ANY($3::text[])${claim} RETURNING *`,
      values,
    );
    return rowsOf<ExecutionRow>(res)[0];
  }

  /**
   * Takes the key for this execution, unless a live one holds it: then that one's execution id
   * and args hash. A key past its window is taken over — never while its call is still unfinished.
   */
  async claimIdempotencyKey(
    m: EntityManager,
    k: { orgId: string; key: string; executionId: string; argsHash: string; windowMs: number },
  ): Promise<{ claimed: true } | { claimed: false; executionId: string; argsHash: string }> {
    const taken: Array<{ execution_id: string }> = await m.query(
      `INSERT INTO executor.idempotency_keys (org_id, idempotency_key, execution_id, args_hash, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))
       ON CONFLICT (org_id, idempotency_key) DO UPDATE SET execution_id = EXCLUDED.execution_id, args_hash = EXCLUDED.args_hash, expires_at = EXCLUDED.expires_at
       WHERE executor.idempotency_keys.expires_at < now()
         AND NOT EXISTS (SELECT 1 FROM executor.executions e WHERE e.execution_id = executor.idempotency_keys.execution_id
                         AND e.status IN ('queued', 'running', 'pending_approval', 'awaiting_client'))
       RETURNING execution_id`,
      [k.orgId, k.key, k.executionId, k.argsHash, k.windowMs],
    );
    if (taken[0]?.execution_id === k.executionId) return { claimed: true };
    const held: Array<{ execution_id: string; args_hash: string }> = await m.query(
      'SELECT execution_id, args_hash FROM executor.idempotency_keys WHERE org_id = $1 AND idempotency_key = $2',
      [k.orgId, k.key],
    );
    return { claimed: false, executionId: held[0]!.execution_id, argsHash: held[0]!.args_hash };
  }

  /** Lets the key go (the call it held never started: a retry may run it). */
  async releaseIdempotencyKey(
    m: EntityManager | DataSource,
    orgId: string,
    key: string,
    executionId: string,
  ): Promise<void> {
    await m.query(
      'DELETE FROM executor.idempotency_keys WHERE org_id = $1 AND idempotency_key = $2 AND execution_id = $3',
      [orgId, key, executionId],
    );
  }

  // ---- executor instances (claims) ----

  async heartbeat(instanceId: string): Promise<void> {
    await this.ds.query(
      'INSERT INTO executor.instances (instance_id) VALUES ($1) ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now()',
      [instanceId],
    );
  }

  async removeInstance(instanceId: string): Promise<void> {
    await this.ds.query('DELETE FROM executor.instances WHERE instance_id = $1', [instanceId]);
  }

  /** Running records whose executor has not said it is alive for lostAfterMs (or is gone). */
  async lostClaims(lostAfterMs: number, limit: number): Promise<ExecutionRow[]> {
    return this.ds.query(
      `SELECT e.* FROM executor.executions e
       LEFT JOIN executor.instances i ON i.instance_id = e.claimed_by
       WHERE e.status = 'running' AND (i.instance_id IS NULL OR i.heartbeat_at < now() - make_interval(secs => $1::double precision / 1000))
       LIMIT $2`,
      [lostAfterMs, limit],
    );
  }

  /** Whether the executor holding a claim is alive (said so within lostAfterMs). */
  async instanceAlive(instanceId: string, lostAfterMs: number): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      'SELECT 1 FROM executor.instances WHERE instance_id = $1 AND heartbeat_at >= now() - make_interval(secs => $2::double precision / 1000)',
      [instanceId, lostAfterMs],
    );
    return rows.length > 0;
  }

  /** Instances silent for far longer than any claim could last: their rows go. */
  async forgetDeadInstances(olderThanMs: number): Promise<void> {
    await this.ds.query(
      `DELETE FROM executor.instances i WHERE heartbeat_at < now() - make_interval(secs => $1::double precision / 1000)
       AND NOT EXISTS (SELECT 1 FROM executor.executions e WHERE e.status = 'running' AND e.claimed_by = i.instance_id)`,
      [olderThanMs],
    );
  }

  // ---- sweeps ----

  async expiredApprovals(limit: number): Promise<ExecutionRow[]> {
    return this.ds.query(
      `SELECT * FROM executor.executions WHERE status = 'pending_approval' AND expires_at < now() ORDER BY expires_at LIMIT $1`,
      [limit],
    );
  }

  /** Queued async records not put on the work queue again for requeueAfterMs. */
  async staleQueued(requeueAfterMs: number, limit: number): Promise<ExecutionRow[]> {
    return this.ds.query(
      `SELECT * FROM executor.executions WHERE status = 'queued' AND queued_at < now() - make_interval(secs => $1::double precision / 1000) ORDER BY queued_at LIMIT $2`,
      [requeueAfterMs, limit],
    );
  }

  /** Drops sealed payloads past their retention (records keep their metadata; their refs become null). */
  async dropExpiredPayloads(limit: number): Promise<number> {
    const res: unknown = await this.ds.query(
      `DELETE FROM executor.sealed_payloads WHERE payload_id IN (SELECT payload_id FROM executor.sealed_payloads WHERE expires_at < now() LIMIT $1) RETURNING payload_id`,
      [limit],
    );
    return rowsOf(res).length;
  }

  async dropOldRecords(retentionMs: number, limit: number): Promise<void> {
    await this.ds.query(
      `DELETE FROM executor.executions WHERE execution_id IN (
         SELECT execution_id FROM executor.executions WHERE finished_at < now() - make_interval(secs => $1::double precision / 1000) LIMIT $2)`,
      [retentionMs, limit],
    );
    await this.ds.query(
      `DELETE FROM executor.idempotency_keys k WHERE k.expires_at < now() AND NOT EXISTS (
         SELECT 1 FROM executor.executions e WHERE e.execution_id = k.execution_id AND e.status IN ('queued', 'running', 'pending_approval', 'awaiting_client'))`,
    );
  }
}

/** TypeORM answers an UPDATE/DELETE … RETURNING on Postgres as [rows, count], anything else as rows. */
function rowsOf<T>(res: unknown): T[] {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number')
    return res[0] as T[];
  return res as T[];
}
