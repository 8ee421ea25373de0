import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  ExecutionWork,
  ToolplaneError,
  type ExecutionState,
  type Tool,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { APP_CONFIG, type PendingEvent } from '@toolplane/platform';
import { createHash, randomUUID } from 'node:crypto';
import type { ExecutorConfig } from '../executor.config';
import { ExecutionOutbox } from './execution-outbox';
import {
  ExecutionsRepository,
  type ExecutionRow,
  type ExecutionFilter,
  type NewExecutionRow,
} from './executions.repository';
import { ExecutorInstance } from './executor-instance';
import { MAX_SEALED_CHARS, PayloadSealer, type SealedPayload } from './payload-sealer';
import { executionEvent, outcomeEvent } from './record.mapper';
import { issuedAt } from './execution-id';
import { RecordWriter } from './record-writer';

/** Who made a call and how: what its record is created with. */
export interface RecordDraft {
  executionId: string;
  orgId: string;
  agentId: string | null;
  /** The end user the call is made for (the request's user_id). */
  userId: string | null;
  /** The tool set the call was made through (the request's toolset). */
  toolset: string | null;
  tool: Tool | null;
  toolName: string | null;
  mode: 'sync' | 'async';
  traceId: string;
  idempotencyKey: string | null;
  argsHash: string | null;
  batchId: string | null;
  callId: string | null;
  timeoutMs: number | null;
}

/** A call kept (sealed) until it runs: its arguments and per-call env. */
export interface StoredCall {
  args: Record<string, unknown>;
  env?: Record<string, string>;
}

export type OpenState = Extract<ExecutionState, 'running' | 'queued' | 'pending_approval' | 'awaiting_client'>;

export type { ExecutionRow, ExecutionFilter };

/** What a move sets on the record (columns, and those set to now()). */
export type RecordChange = Parameters<ExecutionsRepository['transition']>[4];

/** One move of a record: what it sets, what it announces, and what it keeps or drops. */
export interface RecordMove {
  set: RecordChange;
  /** The events (or work) the move stages in its transaction, published once it commits. */
  events?: (moved: ExecutionRow) => PendingEvent[];
  /** Drops the record's stored call (its arguments are no longer needed). */
  dropCall?: boolean;
  /** Only while this executor still holds the claim. */
  claimedBy?: string;
  /** The outcome, kept sealed with the record (result_ref; none when too large to keep). */
  result?: ToolExecutionResult;
  /** A call kept sealed in place of the stored one (call_ref; approved with corrected args). */
  call?: StoredCall;
}

export type OpenedRecord =
  | { created: true; row: ExecutionRow }
  | { created: false; row: ExecutionRow; sameRequest: boolean };

/** What an idempotent retry must match: the tool and the arguments (keys in any order). */
export function argsHashOf(toolId: string, args: unknown): string {
  return createHash('sha256').update(toolId).update('\u0000').update(canonicalJson(args)).digest('hex');
}

function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}

/** The record's final state for a result. */
export const finalStateOf = (r: ToolExecutionResult): ExecutionState =>
  r.status === 'success' ? 'succeeded' : 'failed';
const errorCodeOf = (r: ToolExecutionResult): string | null =>
  r.status === 'success' ? null : (r.error?.code ?? ErrorCode.TOOL_EXCEPTION);

/** A move whose conditional UPDATE found the record already moved by someone else (its transaction rolls back). */
class MoveLost extends Error {
  constructor() {
    super('the record was moved by someone else');
  }
}

class KeyHeld extends Error {
  constructor(
    readonly executionId: string,
    readonly argsHash: string,
  ) {
    super('idempotency key held');
  }
}

/**
 * The execution records: created, moved from state to state (each move one conditional UPDATE, so
 * two executors never both win it), read, and their sealed payloads stored and opened.
 *
 * Durable when: a call with an idempotency key, an async call, a call needing approval and a
 * client-side call have their record committed before they run or answer (`open`); every outcome
 * of such a record is committed before it is answered (`finish`). Sync calls without a key are
 * recorded just after they answer (`recordAfter`, RecordWriter).
 */
@Injectable()
export class ExecutionRecords {
  private readonly log = new Logger(ExecutionRecords.name);

  constructor(
    private readonly repo: ExecutionsRepository,
    private readonly sealer: PayloadSealer,
    private readonly outbox: ExecutionOutbox,
    private readonly writer: RecordWriter,
    private readonly instance: ExecutorInstance,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  get instanceId(): string {
    return this.instance.id;
  }

  /** A finished sync call, recorded after it answered (write-behind; waits only for room). */
  recordAfter(draft: RecordDraft, result: ToolExecutionResult, startedAt: Date): Promise<void> {
    const finished = new Date();
    return this.writer.add({
      row: {
        ...this.baseRow(draft),
        status: finalStateOf(result),
        provider: result.provider || null,
        created_at: startedAt,
        started_at: startedAt,
        finished_at: finished,
        duration_ms: result.duration_ms,
        error_code: errorCodeOf(result),
      },
      result,
    });
  }

  /**
   * Creates the record of a durable call in `state` — its call sealed when it must wait (`call`),
   * its idempotency key taken, its event or work staged — in one transaction, before the call runs
   * or is answered. With a live key held by another execution: that one's record, and whether the
   * request is the same (tool, args, end user and tool set: another user's retry never gets this
   * one's result, nor a call through a set the outcome of a call its policy would have held).
   */
  async open(draft: RecordDraft, state: OpenState, call?: StoredCall): Promise<OpenedRecord> {
    const sealed = call ? await this.sealer.seal(draft.orgId, randomUUID(), call) : undefined;
    const now = new Date();
    const row: NewExecutionRow = {
      ...this.baseRow(draft),
      status: state,
      created_at: now,
      call_ref: sealed?.payloadId ?? null,
      ...(state === 'running' ? { started_at: now, claimed_by: this.instance.id, attempts: 1 } : {}),
      ...(state === 'queued' ? { queued_at: now } : {}),
      ...(state === 'pending_approval'
        ? { expires_at: new Date(now.getTime() + this.config.EXECUTION_APPROVAL_TTL_MS) }
        : {}),
    };
    try {
      await this.repo.transaction(async (m) => {
        if (draft.idempotencyKey) {
          const key = await this.repo.claimIdempotencyKey(m, {
            orgId: draft.orgId,
            key: draft.idempotencyKey,
            executionId: draft.executionId,
            argsHash: draft.argsHash!,
            windowMs: this.config.EXECUTION_IDEMPOTENCY_WINDOW_MS,
          });
          if (!key.claimed) throw new KeyHeld(key.executionId, key.argsHash);
        }
        if (sealed) await this.repo.insertPayloads(m, [sealed], this.payloadExpiry(state));
        await this.repo.insert(m, [row]);
        const full = row as ExecutionRow;
        if (state === 'pending_approval') await this.outbox.stage(m, [executionEvent('held', full)]);
        if (state === 'queued') await this.outbox.stage(m, [workItem(full)]);
      });
    } catch (e) {
      if (!(e instanceof KeyHeld)) throw e;
      const existing = await this.repo.get(draft.orgId, e.executionId);
      if (!existing)
        throw new ToolplaneError(ErrorCode.INTERNAL, 'The idempotency key names an execution that is gone');
      return {
        created: false,
        row: existing,
        sameRequest:
          e.argsHash === draft.argsHash &&
          existing.user_id === draft.userId &&
          (existing.toolset ?? null) === draft.toolset,
      };
    }
    if (state === 'pending_approval' || state === 'queued') void this.outbox.drain(draft.orgId);
    return { created: true, row: row as ExecutionRow };
  }

  /**
   * Records the outcome of a run this executor claimed (running → succeeded | failed), its result
   * sealed, its call dropped, its event staged. Undefined when the claim was no longer this
   * executor's (judged lost meanwhile): the outcome is then not recorded, and said so in the log.
   */
  async finish(row: ExecutionRow, result: ToolExecutionResult): Promise<ExecutionRow | undefined> {
    const done = await this.move(row, ['running'], {
      set: {
        status: finalStateOf(result),
        provider: result.provider || null,
        error_code: errorCodeOf(result),
        duration_ms: result.duration_ms,
        nowColumns: ['finished_at'],
      },
      events: (moved) => [outcomeEvent(moved)],
      dropCall: true,
      claimedBy: this.instance.id,
      result,
    });
    if (!done)
      this.log.warn(
        `execution ${row.execution_id} finished here after its claim was judged lost: its outcome (${result.status}) is not recorded`,
      );
    return done;
  }

  /**
   * Moves a record out of one of `from` — one conditional UPDATE (undefined when someone else moved
   * it first), in one transaction with what the move keeps (its sealed result or call), drops (its
   * stored call) and announces (its events, published once it commits). A move that only sets
   * columns is that one UPDATE alone.
   */
  async move(row: ExecutionRow, from: readonly ExecutionState[], mv: RecordMove): Promise<ExecutionRow | undefined> {
    const [result, call] = await Promise.all([
      mv.result ? this.sealResult(row, mv.result) : undefined,
      mv.call ? this.sealer.seal(row.org_id, randomUUID(), mv.call) : undefined,
    ]);
    const dropCall = mv.dropCall || call !== undefined;
    const set: RecordChange = {
      ...(dropCall ? { call_ref: null } : {}),
      ...mv.set,
      ...(mv.result ? { result_ref: result?.payloadId ?? null } : {}),
      ...(call ? { call_ref: call.payloadId } : {}),
    };
    if (!result && !call && !(dropCall && row.call_ref) && !mv.events)
      return this.repo.transition(this.repo.ds, row.org_id, row.execution_id, from, set, mv.claimedBy);
    const moved = await this.repo
      .transaction(async (m) => {
        if (result)
          await this.repo.insertPayloads(m, [result], new Date(Date.now() + this.config.EXECUTION_RESULT_RETENTION_MS));
        if (call)
          await this.repo.insertPayloads(
            m,
            [call],
            new Date(
              Date.now() + this.config.EXECUTION_RECORD_RETENTION_MS + this.config.EXECUTION_RESULT_RETENTION_MS,
            ),
          );
        const moved = await this.repo.transition(m, row.org_id, row.execution_id, from, set, mv.claimedBy);
        // Lost the race: roll back what the move stored for it (its sealed payloads), not commit it orphaned.
        if (!moved) throw new MoveLost();
        if (dropCall && row.call_ref) await this.repo.deletePayload(m, row.call_ref);
        if (mv.events) await this.outbox.stage(m, mv.events(moved));
        return moved;
      })
      .catch((e: unknown) => {
        if (e instanceof MoveLost) return undefined;
        throw e;
      });
    if (moved && mv.events) void this.outbox.drain(row.org_id);
    return moved;
  }

  /** A queued record claimed by this executor (queued → running); undefined when another took it. */
  claimQueued(row: ExecutionRow): Promise<ExecutionRow | undefined> {
    return this.move(row, ['queued'], {
      set: { status: 'running', claimed_by: this.instance.id, attempts: row.attempts + 1, nowColumns: ['started_at'] },
    });
  }

  /** A record this executor claimed and did not start, back to queued (running → queued) for the next delivery. */
  async handBack(row: ExecutionRow): Promise<void> {
    await this.move(row, ['running'], {
      set: { status: 'queued', claimed_by: null, nowColumns: ['queued_at'] },
      claimedBy: this.instance.id,
    });
  }

  /** A pending approval past its expiry: expired, its call dropped, its outcome announced. */
  expire(row: ExecutionRow): Promise<ExecutionRow | undefined> {
    return this.move(row, ['pending_approval'], {
      set: { status: 'expired', error_code: ErrorCode.EXECUTION_EXPIRED, nowColumns: ['finished_at'] },
      events: (r) => [outcomeEvent(r)],
      dropCall: true,
    });
  }

  /** Lets the record's idempotency key go (its call never started: a retry may run it). */
  async releaseKey(row: ExecutionRow): Promise<void> {
    if (row.idempotency_key)
      await this.repo.releaseIdempotencyKey(this.repo.ds, row.org_id, row.idempotency_key, row.execution_id);
  }

  /** The record of an org's execution, as it is now. */
  get(orgId: string, executionId: string): Promise<ExecutionRow | undefined> {
    return this.repo.get(orgId, executionId);
  }

  /**
   * The record of an id this deployment may just have handed out (read your writes): as `get`,
   * but a record still on its way is waited for rather than answered as missing — at once when
   * this replica holds it in its write-behind queue (its write starts now), else by asking the other
   * replicas to write it now (ExecutionRecordWanted) and reading again with backoff until the id is
   * EXECUTION_READ_WAIT_MS old (or `deadline`, epoch ms). An id that
   * names no time (made before ids carried one) or is older than that is not waited for.
   */
  async getWritten(orgId: string, executionId: string, deadline = Infinity): Promise<ExecutionRow | undefined> {
    const row = await this.repo.get(orgId, executionId);
    if (row) return row;
    const queued = this.writer.written(orgId, executionId);
    if (queued) {
      await queued;
      return this.repo.get(orgId, executionId);
    }
    const issued = issuedAt(executionId);
    const wait = this.config.EXECUTION_READ_WAIT_MS;
    const now = Date.now();
    // Another replica's clock may be ahead of ours: an id from the future is fresh, never waited for longer.
    if (issued === undefined || issued < now - wait || issued > now + wait) return undefined;
    const until = Math.min(Math.min(issued, now) + wait, deadline);
    this.writer.askHolders(orgId, executionId);
    for (let pause = 10; Date.now() + pause < until; pause = Math.min(pause * 2, 50)) {
      await new Promise((r) => setTimeout(r, pause));
      const written = await this.repo.get(orgId, executionId);
      if (written) return written;
    }
    return undefined;
  }

  /** An org's records, newest first (filter and page as ExecutionFilter says). */
  list(filter: ExecutionFilter): Promise<ExecutionRow[]> {
    return this.repo.list(filter);
  }

  /**
   * finish, retried with backoff until it is recorded (Postgres or credentials back) or this
   * executor stops: the run is never repeated, only its recording.
   */
  async finishDurably(
    row: ExecutionRow,
    result: ToolExecutionResult,
    stopping: () => boolean,
  ): Promise<ExecutionRow | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.finish(row, result);
      } catch (e) {
        if (stopping()) throw e;
        if (attempt === 0)
          this.log.warn(
            `recording the outcome of execution ${row.execution_id} failed, retrying: ${(e as Error).message}`,
          );
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** Math.min(attempt, 6))));
      }
    }
  }

  /** The call a waiting record keeps (sealed), or null once it ran or was dropped. */
  async callOf(row: ExecutionRow): Promise<StoredCall | null> {
    if (!row.call_ref) return null;
    const p = await this.repo.payload(row.org_id, row.call_ref);
    return p ? this.sealer.open<StoredCall>(p) : null;
  }

  /**
   * The outcome of a final record: its sealed result while kept; for outcomes Toolplane decided
   * (EXECUTOR_LOST, EXECUTION_EXPIRED), one made from the record; null past its retention.
   */
  async resultOf(row: ExecutionRow): Promise<ToolExecutionResult | null> {
    if (!['succeeded', 'failed', 'denied', 'expired'].includes(row.status)) return null;
    if (row.result_ref) {
      const p = await this.repo.payload(row.org_id, row.result_ref);
      if (p) {
        const all = await this.sealer.open<Record<string, ToolExecutionResult>>(p);
        const r = all[row.execution_id];
        if (r) return r;
      }
    }
    return row.error_code && SYNTHETIC[row.error_code] ? syntheticResult(row) : null;
  }

  /**
   * A running record whose executor is gone (silent for EXECUTOR_LOST_AFTER_MS): settled once, by
   * whichever executor sees it first. A tool declared idempotent (metadata_.idempotent) whose call
   * is still stored goes back on the work queue; any other ends failed/EXECUTOR_LOST — never run twice.
   * Returns the settled row, or undefined when it was not lost (or this executor may not judge yet).
   */
  async settleIfLost(row: ExecutionRow): Promise<ExecutionRow | undefined> {
    if (row.status !== 'running' || row.claimed_by === this.instance.id || !this.instance.canJudgeOthers())
      return undefined;
    if (row.claimed_by && (await this.repo.instanceAlive(row.claimed_by, this.config.EXECUTOR_LOST_AFTER_MS)))
      return undefined;
    const claimedBy = row.claimed_by ?? undefined;
    const settled = await (row.rerun_safe && row.call_ref
      ? this.move(row, ['running'], {
          set: { status: 'queued', claimed_by: null, nowColumns: ['queued_at'] },
          events: (moved) => [workItem(moved)],
          claimedBy,
        })
      : this.move(row, ['running'], {
          set: { status: 'failed', error_code: ErrorCode.EXECUTOR_LOST, nowColumns: ['finished_at'] },
          events: (moved) => [outcomeEvent(moved)],
          dropCall: true,
          claimedBy,
        }));
    if (settled)
      this.log.warn(
        `execution ${row.execution_id}: its executor ${row.claimed_by} is gone; ${settled.status === 'queued' ? 'queued again (idempotent tool)' : 'failed with EXECUTOR_LOST'}`,
      );
    return settled;
  }

  /** The one way a result is sealed for its record: undefined when too large to keep (the record keeps its outcome, not its value). */
  private sealResult(row: ExecutionRow, result: ToolExecutionResult): Promise<SealedPayload | undefined> {
    if (JSON.stringify(result).length > MAX_SEALED_CHARS) return Promise.resolve(undefined);
    return this.sealer.seal(row.org_id, randomUUID(), { [row.execution_id]: result });
  }

  private baseRow(d: RecordDraft): NewExecutionRow {
    return {
      execution_id: d.executionId,
      org_id: d.orgId,
      status: 'running',
      agent_id: d.agentId,
      user_id: d.userId,
      toolset: d.toolset,
      tool_id: d.tool?.id ?? null,
      tool_name: d.tool?.name ?? d.toolName,
      provider: null,
      mode: d.mode,
      trace_id: d.traceId,
      idempotency_key: d.idempotencyKey,
      batch_id: d.batchId,
      call_id: d.callId,
      args_hash: d.argsHash,
      timeout_ms: d.timeoutMs,
      rerun_safe: d.tool?.metadata_?.idempotent === true,
      error_code: null,
    };
  }

  /** A waiting call's sealed arguments live as long as it may wait (then the sweep expires or requeues it). */
  private payloadExpiry(state: OpenState): Date {
    const wait =
      state === 'pending_approval' ? this.config.EXECUTION_APPROVAL_TTL_MS : this.config.EXECUTION_RECORD_RETENTION_MS;
    return new Date(Date.now() + wait + this.config.EXECUTION_RESULT_RETENTION_MS);
  }
}

/** The work-queue message of a queued record (its id only: the call stays sealed in the record). */
export function workItem(r: ExecutionRow): PendingEvent {
  return {
    descriptor: ExecutionWork,
    eventId: randomUUID(),
    orgId: r.org_id,
    payload: { org_id: r.org_id, execution_id: r.execution_id },
  };
}

const SYNTHETIC: Record<string, string> = {
  [ErrorCode.EXECUTOR_LOST]: 'The executor running this call died before recording its outcome; it was not run again',
  [ErrorCode.EXECUTION_EXPIRED]: 'Nobody approved or denied this call in time: it did not run',
};

/** A final record's result when none is stored. */
export function syntheticResult(row: ExecutionRow): ToolExecutionResult {
  const code = row.error_code;
  return {
    execution_id: row.execution_id,
    status: row.status === 'succeeded' ? 'success' : 'error',
    func_return: code ? (SYNTHETIC[code] ?? null) : null,
    stdout: [],
    stderr: [],
    sandbox_config_fingerprint: null,
    provider: row.provider ?? '',
    duration_ms: row.duration_ms === null ? 0 : Number(row.duration_ms),
    trace_id: row.trace_id,
    ...(code
      ? { error: { code, message: SYNTHETIC[code] ?? `The call ended with ${code}; its result is no longer kept` } }
      : {}),
  };
}
