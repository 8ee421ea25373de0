import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import type { ExecutorConfig } from '../executor.config';
import { ExecutionsRepository } from './executions.repository';

/**
 * This executor process as the owner of claims: a random instance id, and a heartbeat row in
 * executor.instances every EXECUTOR_HEARTBEAT_MS. Another executor judges a claim lost when its
 * instance has been silent for EXECUTOR_LOST_AFTER_MS (Postgres time, no clock skew) — but only
 * after it has itself reached the database without a break for that long: after an outage of
 * Postgres every live executor's heartbeat is old, and none must be judged by it.
 */
@Injectable()
export class ExecutorInstance implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly id = randomUUID();
  private readonly log = new Logger(ExecutorInstance.name);
  private timer?: NodeJS.Timeout;
  /** Since when (epoch ms) every heartbeat succeeded; undefined after a failed one. */
  private reachableSince?: number;
  private beating?: Promise<void>;

  constructor(
    private readonly repo: ExecutionsRepository,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // The instance exists before it claims anything.
    await this.repo.heartbeat(this.id);
    this.reachableSince = Date.now();
    this.log.log(`executor instance ${this.id}: claims made here carry this id`);
    this.timer = setInterval(
      () => void (this.beating ??= this.beat().finally(() => (this.beating = undefined))),
      this.config.EXECUTOR_HEARTBEAT_MS,
    );
    this.timer.unref();
  }

  /** Last of all (after in-flight work settled): this instance's claims are no one's now. */
  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.beating;
    await this.repo
      .removeInstance(this.id)
      .catch((e: Error) => this.log.warn(`could not remove executor instance ${this.id}: ${e.message}`));
  }

  /** Whether this executor may judge other executors' claims (see the class comment). */
  canJudgeOthers(): boolean {
    return this.reachableSince !== undefined && Date.now() - this.reachableSince >= this.config.EXECUTOR_LOST_AFTER_MS;
  }

  private async beat(): Promise<void> {
    try {
      await this.repo.heartbeat(this.id);
      if (this.reachableSince === undefined) {
        this.reachableSince = Date.now();
        this.log.log('Postgres reachable again: heartbeats resumed');
      }
    } catch (e) {
      if (this.reachableSince !== undefined) this.log.warn(`executor heartbeat failed: ${(e as Error).message}`);
      this.reachableSince = undefined;
    }
  }
}
