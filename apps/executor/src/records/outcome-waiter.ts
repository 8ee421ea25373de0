import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { EXECUTION_EVENTS } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { ExecutionRecords, type ExecutionRow } from './records.service';

/**
 * Waits for another call's record to reach a state — a duplicate (same idempotency key) waiting
 * for the first call's outcome, on this executor or any other. Woken by the execution events every
 * executor receives (core NATS), and re-reading the record at least every EXECUTION_WAIT_POLL_MS
 * in case an event is missed; while it waits, a claim whose executor died is settled (so a
 * duplicate never waits on a dead executor).
 */
@Injectable()
export class OutcomeWaiter implements OnModuleInit, OnModuleDestroy {
  private readonly waiting = new Map<string, Set<() => void>>();
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly records: ExecutionRecords,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  onModuleInit(): void {
    this.sub = this.messaging.onEvents(EXECUTION_EVENTS, (_e, p) => {
      for (const wake of this.waiting.get(p.execution_id) ?? []) wake();
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
    for (const set of this.waiting.values()) for (const wake of set) wake();
  }

  /** The record once `done(row)` holds, or as it is at `deadline` (epoch ms); undefined if it is gone. */
  async until(
    orgId: string,
    executionId: string,
    deadline: number,
    done: (row: ExecutionRow) => boolean,
    signal?: AbortSignal,
  ): Promise<ExecutionRow | undefined> {
    for (;;) {
      let row = await this.records.get(orgId, executionId);
      if (row?.status === 'running') row = (await this.records.settleIfLost(row)) ?? row;
      if (!row || done(row)) return row;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return row;
      await new Promise<void>((resolve) => {
        let set = this.waiting.get(executionId);
        if (!set) this.waiting.set(executionId, (set = new Set()));
        const wake = () => {
          clearTimeout(timer);
          set!.delete(wake);
          if (!set!.size) this.waiting.delete(executionId);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, this.config.EXECUTION_WAIT_POLL_MS));
        set.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }
}
