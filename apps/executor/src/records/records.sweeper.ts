import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { ExecutionsRepository } from './executions.repository';
import { ExecutorInstance } from './executor-instance';
import { ExecutionRecords, workItem } from './records.service';
import { workQueueIdle } from './work-stream';

const BATCH = 200;
/** Retention work (dropping old payloads and records) runs every this many sweeps. */
const RETENTION_EVERY = 30;

/**
 * Every executor, every EXECUTION_SWEEP_MS: expires pending approvals past their TTL, settles
 * claims of executors that died, puts queued async calls whose work message was lost (or ran out
 * of deliveries) back on the work queue, and drops results and records past their retention.
 * Replicas sweep side by side: each move is one conditional UPDATE, so only one of them makes it.
 */
@Injectable()
export class RecordsSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RecordsSweeper.name);
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  private sweeps = 0;
  private failing = false;

  constructor(
    private readonly records: ExecutionRecords,
    private readonly repo: ExecutionsRepository,
    private readonly instance: ExecutorInstance,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(
      () => void (this.sweeping ??= this.sweep().finally(() => (this.sweeping = undefined))),
      this.config.EXECUTION_SWEEP_MS,
    );
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  async sweep(): Promise<void> {
    try {
      await this.expireApprovals();
      if (this.instance.canJudgeOthers())
        for (const row of await this.repo.lostClaims(this.config.EXECUTOR_LOST_AFTER_MS, BATCH))
          await this.records.settleIfLost(row);
      await this.requeueStale();
      if (++this.sweeps % RETENTION_EVERY === 0) await this.retention();
      if (this.failing) this.log.log('sweeps succeed again');
      this.failing = false;
    } catch (e) {
      if (!this.failing) this.log.warn(`sweep failed: ${(e as Error).message}`);
      this.failing = true;
    }
  }

  private async expireApprovals(): Promise<void> {
    for (const row of await this.repo.expiredApprovals(BATCH)) {
      if (await this.records.expire(row)) this.log.log(`execution ${row.execution_id} expired waiting for approval`);
    }
  }

  /**
   * A queued call whose message is gone (the work queue has nothing pending or in flight, yet the
   * call waited EXECUTION_REQUEUE_AFTER_MS) is put on the work queue again; its claim keeps it from
   * running twice.
   */
  private async requeueStale(): Promise<void> {
    const stale = await this.repo.staleQueued(this.config.EXECUTION_REQUEUE_AFTER_MS, BATCH);
    if (!stale.length || !(await workQueueIdle(this.messaging.nc, this.messaging.prefix).catch(() => false))) return;
    for (const row of stale) {
      const moved = await this.records.move(row, ['queued'], {
        set: { nowColumns: ['queued_at'] },
        events: (r) => [workItem(r)],
      });
      if (moved)
        this.log.warn(
          `execution ${row.execution_id} waited queued for ${this.config.EXECUTION_REQUEUE_AFTER_MS} ms: put on the work queue again`,
        );
    }
  }

  private async retention(): Promise<void> {
    await this.repo.dropExpiredPayloads(5000);
    await this.repo.dropOldRecords(this.config.EXECUTION_RECORD_RETENTION_MS, 5000);
    await this.repo.forgetDeadInstances(Math.max(this.config.EXECUTOR_LOST_AFTER_MS * 10, 3600_000));
  }
}
