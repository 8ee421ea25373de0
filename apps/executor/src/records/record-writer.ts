import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ExecutionRecordWanted, type ToolExecutionResult } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import type { ExecutorConfig } from '../executor.config';
import { ExecutionOutbox } from './execution-outbox';
import { ExecutionsRepository, type ExecutionRow, type NewExecutionRow } from './executions.repository';
import { MAX_SEALED_CHARS, PayloadSealer, type SealedPayload } from './payload-sealer';
import { outcomeEvent } from './record.mapper';

/** A finished call to record: its final row (status, times, error code) and its result. */
export interface FinishedCall {
  row: NewExecutionRow;
  result: ToolExecutionResult;
}

/** Seal attempts of one batch before its records are written without their results. */
const SEAL_ATTEMPTS = 3;

/**
 * The write-behind path of sync calls without an idempotency key: they answer first and are
 * recorded just after, off the hot path. Finished calls wait in a bounded queue; every
 * EXECUTION_WRITE_BEHIND_MS (or once EXECUTION_WRITE_BEHIND_BATCH wait) the queue is written: one
 * seal per org and chunk (the results of several records under one sealed payload), one
 * transaction inserting the payloads, the records and their outcome events. A failed write is
 * retried with backoff; when EXECUTION_WRITE_BEHIND_MAX records wait, callers wait for room
 * before answering (backpressure instead of loss).
 *
 * What this trades: a crash of the executor between a call's answer and the write loses that
 * call's record (never its outcome: the caller has it) — at most EXECUTION_WRITE_BEHIND_MS of
 * calls, or the backlog while Postgres is unreachable. Calls that must be durable before they run
 * or answer (idempotency key, async, approval, client-side) never take this path. When credentials
 * cannot seal for SEAL_ATTEMPTS tries, records are written without their results.
 */
@Injectable()
export class RecordWriter implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RecordWriter.name);
  private queue: FinishedCall[] = [];
  private readonly room: Array<() => void> = [];
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  /** Readers waiting for a queued call's record to be written (executions.get of a fresh id), by execution id. */
  private readonly readers = new Map<string, Array<() => void>>();
  private failures = 0;
  private sealFailures = 0;
  private stopping = false;

  constructor(
    private readonly repo: ExecutionsRepository,
    private readonly sealer: PayloadSealer,
    private readonly outbox: ExecutionOutbox,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
    private readonly messaging: MessagingClient,
  ) {}

  private wanted?: { unsubscribe(): void };

  onModuleInit(): void {
    // Another replica's reader wants a record this one may hold: written now, not at the window's end.
    this.wanted = this.messaging.subscribeSealed(ExecutionRecordWanted, (p) => {
      void this.written(p.org_id, p.execution_id);
    });
  }

  /** Asks every executor replica to write the org's record of `executionId` now if it holds it (read your writes). */
  askHolders(orgId: string, executionId: string): void {
    this.messaging.notify(ExecutionRecordWanted, { org_id: orgId, execution_id: executionId });
  }

  /** Queues a finished call; waits only when EXECUTION_WRITE_BEHIND_MAX calls are already waiting. */
  async add(call: FinishedCall): Promise<void> {
    while (this.queue.length >= this.config.EXECUTION_WRITE_BEHIND_MAX && !this.stopping) {
      this.kick();
      await new Promise<void>((r) => this.room.push(r));
    }
    this.queue.push(call);
    if (this.queue.length >= this.config.EXECUTION_WRITE_BEHIND_BATCH) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.config.EXECUTION_WRITE_BEHIND_MS);
  }

  /**
   * When the record of the org's `executionId` is queued here: a promise settled once it is written (or this
   * writer gives up on it: it stops), and the write is started now instead of at the window's end —
   * a reader asking for a record it was just handed pays for its write, the call did not.
   * Undefined when this writer does not hold it.
   */
  written(orgId: string, executionId: string): Promise<void> | undefined {
    if (!this.queue.some((c) => c.row.execution_id === executionId && c.row.org_id === orgId)) return undefined;
    const done = new Promise<void>((resolve) => {
      const list = this.readers.get(executionId);
      if (list) list.push(resolve);
      else this.readers.set(executionId, [resolve]);
    });
    if (!this.stopping) this.kick();
    return done;
  }

  /** Calls waiting to be recorded (for tests and metrics). */
  get pending(): number {
    return this.queue.length;
  }

  async onModuleDestroy(): Promise<void> {
    this.wanted?.unsubscribe();
    this.stopping = true;
    const deadline = Date.now() + Math.max(2000, this.config.SHUTDOWN_GRACE_MS);
    while (this.queue.length && Date.now() < deadline) {
      this.kick();
      await Promise.race([this.flushing, new Promise((r) => setTimeout(r, 100))]);
    }
    await this.flushing;
    if (this.queue.length)
      this.log.warn(
        `stopping with ${this.queue.length} execution record(s) not written (Postgres or credentials unreachable)`,
      );
    for (const wake of this.room.splice(0)) wake();
    for (const id of [...this.readers.keys()]) this.wakeReaders(id);
  }

  private wakeReaders(executionId: string): void {
    const list = this.readers.get(executionId);
    if (!list) return;
    this.readers.delete(executionId);
    for (const wake of list) wake();
  }

  private kick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing ??= this.flush().finally(() => {
      this.flushing = undefined;
      if (!this.queue.length || this.stopping) return;
      // What arrived during the write waits for its own window (or a full batch): writing it at
      // once would chain one small transaction (and seal) per call whenever a write takes about
      // as long as a call — the write-behind would batch nothing.
      if (this.queue.length >= this.config.EXECUTION_WRITE_BEHIND_BATCH || this.room.length) this.kick();
      else this.timer ??= setTimeout(() => this.kick(), this.config.EXECUTION_WRITE_BEHIND_MS);
    });
  }

  /** Writes the calls waiting when it starts (in batches); later ones wait for the next kick. */
  private async flush(): Promise<void> {
    let left = this.queue.length;
    while (left > 0 && this.queue.length) {
      const batch = this.queue.slice(0, Math.min(left, Math.max(this.config.EXECUTION_WRITE_BEHIND_BATCH, 1)));
      try {
        await this.write(batch);
        this.queue.splice(0, batch.length);
        if (this.readers.size) for (const c of batch) this.wakeReaders(c.row.execution_id);
        left -= batch.length;
        for (const wake of this.room.splice(0)) wake();
        if (this.failures) this.log.log(`execution records are written again (${this.failures} failed attempt(s))`);
        this.failures = 0;
      } catch (e) {
        if (!this.failures)
          this.log.warn(`writing ${batch.length} execution record(s) failed, retrying: ${(e as Error).message}`);
        this.failures++;
        if (this.stopping && this.failures > 3) return;
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(this.failures, 7))));
      }
    }
  }

  private async write(batch: readonly FinishedCall[]): Promise<void> {
    const payloads: SealedPayload[] = [];
    const refs = new Map<FinishedCall, string>();
    const withResults = this.sealFailures < SEAL_ATTEMPTS;
    if (withResults) {
      try {
        for (const chunk of chunks(batch)) {
          const payloadId = randomUUID();
          const orgId = chunk[0]!.row.org_id;
          payloads.push(
            await this.sealer.seal(
              orgId,
              payloadId,
              Object.fromEntries(chunk.map((c) => [c.row.execution_id, c.result])),
            ),
          );
          for (const c of chunk) refs.set(c, payloadId);
        }
        this.sealFailures = 0;
      } catch (e) {
        this.sealFailures++;
        throw e;
      }
    } else {
      // Credentials could not seal several times in a row: the records go in without their results
      // (the next batch tries sealing again).
      this.log.warn(
        `writing ${batch.length} execution record(s) without their results: the credentials service did not seal them`,
      );
      this.sealFailures = 0;
    }
    const rows = batch.map((c) => ({ ...c.row, result_ref: refs.get(c) ?? null }));
    await this.repo.transaction(async (m) => {
      await this.repo.insertPayloads(m, payloads, new Date(Date.now() + this.config.EXECUTION_RESULT_RETENTION_MS));
      await this.repo.insert(m, rows, { ifAbsent: true });
      if (this.config.EXECUTION_SYNC_EVENTS)
        await this.outbox.stage(
          m,
          rows.map((r) => outcomeEvent(r as ExecutionRow)),
        );
    });
    if (this.config.EXECUTION_SYNC_EVENTS)
      for (const org of new Set(rows.map((r) => r.org_id))) void this.outbox.drain(org);
  }
}

/**
 * The batch by org, in chunks whose results fit one sealed payload. A result too large to seal on
 * its own (it could not cross the bus twice) is left out: its record is written without it.
 */
function chunks(batch: readonly FinishedCall[]): FinishedCall[][] {
  const byOrg = new Map<string, FinishedCall[]>();
  for (const c of batch) {
    const list = byOrg.get(c.row.org_id);
    if (list) list.push(c);
    else byOrg.set(c.row.org_id, [c]);
  }
  const out: FinishedCall[][] = [];
  for (const calls of byOrg.values()) {
    let current: FinishedCall[] = [];
    let size = 0;
    for (const c of calls) {
      const n = JSON.stringify(c.result).length;
      if (n > MAX_SEALED_CHARS) continue;
      if (current.length && size + n > MAX_SEALED_CHARS) {
        out.push(current);
        current = [];
        size = 0;
      }
      current.push(c);
      size += n;
    }
    if (current.length) out.push(current);
  }
  return out;
}
