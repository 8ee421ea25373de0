import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { jetstream, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { context, trace } from '@opentelemetry/api';
import {
  ErrorCode,
  ExecutionWork,
  NOT_STARTED_CODES,
  ToolplaneError,
  type Tool,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { ensureEventsStream, extractTraceContext, MessagingClient, requestContext } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { endUser } from '../records/record.mapper';
import { ExecutionRecords, type ExecutionRow } from '../records/records.service';
import { ensureWorkStream, workStreamNames } from '../records/work-stream';
import { ArgumentsService } from './arguments.service';
import { asToolplaneError, errorResult } from './call-outcomes';
import { step, type CallRequest } from '../calls/call';
import { ToolRunner } from './tool-runner';
import { ToolCatalogService } from './tool-catalog.service';

const tracer = trace.getTracer('executor');
type Outcome = 'done' | 'retry';

/**
 * Async executions: every executor pulls the work queue (one durable consumer, so each message
 * goes to one of them) and runs at most EXECUTION_ASYNC_CONCURRENCY calls at once. A message names
 * an execution; the record decides: only a queued record is run, and only by the executor whose
 * conditional UPDATE claims it (queued → running, claimed_by) — so a redelivered or duplicated
 * message never runs a call twice. The message is kept alive while the call runs and acknowledged
 * once its outcome is recorded. A redelivered message whose record is running on an executor that
 * died settles it (EXECUTOR_LOST, or queued again for a tool declared idempotent).
 */
@Injectable()
export class AsyncRuns implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(AsyncRuns.name);
  private stopped = false;
  private inFlight = 0;
  private loop?: Promise<void>;
  private batch?: ConsumerMessages;
  private slot?: () => void;
  /** Executions this executor is running now (claimed here and in progress). */
  private readonly running = new Set<string>();
  /** Aborted past the shutdown grace: runners are told to stop the calls still running. */
  private readonly abandon = new AbortController();

  constructor(
    private readonly messaging: MessagingClient,
    private readonly records: ExecutionRecords,
    private readonly catalog: ToolCatalogService,
    private readonly args: ArgumentsService,
    private readonly runner: ToolRunner,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await ensureEventsStream(this.messaging.nc, this.messaging.prefix, this.messaging.streamReplicas);
    await ensureWorkStream(this.messaging.nc, this.messaging.prefix, this.config);
    this.loop = this.pull();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.slot?.();
    await this.batch?.close().catch(() => undefined);
    await this.loop;
    const graceEnds = Date.now() + this.config.SHUTDOWN_GRACE_MS;
    while (this.inFlight > 0 && Date.now() < graceEnds) await new Promise((r) => setTimeout(r, 50));
    if (this.inFlight > 0) {
      this.log.warn(`stopping with ${this.inFlight} async call(s) still running: their runners are told to stop them`);
      this.abandon.abort(new ToolplaneError(ErrorCode.SERVICE_RESTARTING, 'The executor running this call stopped'));
      const hardEnd = Date.now() + 5000;
      while (this.inFlight > 0 && Date.now() < hardEnd) await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async pull(): Promise<void> {
    const { stream, consumer: name } = workStreamNames(this.messaging.prefix);
    const js = jetstream(this.messaging.nc);
    let failures = 0;
    while (!this.stopped) {
      const free = this.config.EXECUTION_ASYNC_CONCURRENCY - this.inFlight;
      if (free <= 0) {
        await new Promise<void>((r) => (this.slot = r));
        continue;
      }
      try {
        const consumer = await js.consumers.get(stream, name);
        this.batch = await consumer.fetch({ max_messages: free, expires: 2000 });
        for await (const m of this.batch) {
          this.inFlight++;
          void this.handle(m).finally(() => {
            this.inFlight--;
            this.slot?.();
          });
        }
        if (failures) this.log.log('taking async work again');
        failures = 0;
      } catch (e) {
        if (this.stopped) return;
        if (!failures) this.log.warn(`pulling async work failed (retrying): ${(e as Error).message}`);
        failures++;
        await new Promise((r) => setTimeout(r, Math.min(5000, 200 * failures)));
        await ensureWorkStream(this.messaging.nc, this.messaging.prefix, this.config).catch(() => undefined);
      }
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    const work = ExecutionWork.payload.safeParse(safeJson(m));
    if (!work.success) return void m.term('not an execution work item');
    const keepAlive = setInterval(() => m.working(), Math.max(500, Math.floor(this.config.EXECUTION_ACK_WAIT_MS / 3)));
    try {
      const outcome = await context.with(extractTraceContext(m.headers), () =>
        tracer.startActiveSpan('run queued execution', (span) => {
          span.setAttributes({
            'toolplane.execution.id': work.data.execution_id,
            'toolplane.delivery': m.info.deliveryCount,
          });
          return requestContext
            .run({ signal: this.abandon.signal }, () => this.runQueued(work.data.org_id, work.data.execution_id))
            .finally(() => span.end());
        }),
      );
      if (outcome === 'retry') m.nak(this.retryDelay(m));
      else m.ack();
    } catch (e) {
      this.log.warn(`async execution ${work.data.execution_id}: ${(e as Error).message}; trying again later`);
      m.nak(this.retryDelay(m));
    } finally {
      clearInterval(keepAlive);
    }
  }

  private retryDelay(m: JsMsg): number {
    return Math.min(this.config.EXECUTION_ACK_WAIT_MS, 250 * 2 ** Math.min(m.info.deliveryCount, 8));
  }

  /** Runs the execution if its record is queued and this executor claims it; 'retry' when it should be looked at again later. */
  private async runQueued(orgId: string, executionId: string): Promise<Outcome> {
    let row = await this.records.get(orgId, executionId);
    if (row?.status === 'running' && row.claimed_by === this.records.instanceId) {
      // Claimed here and not running here: a claim left when handing it back failed (the tool never started).
      return this.running.has(executionId) ? 'done' : this.runClaimed(row);
    }
    if (row?.status === 'running') {
      // Running elsewhere: settled if its executor died, else left to it (looked at again later).
      const settled = await this.records.settleIfLost(row);
      if (!settled) return 'retry';
      row = settled;
    }
    if (!row || row.status !== 'queued') return 'done';
    const claimed = await this.records.claimQueued(row);
    if (!claimed) return 'done';
    return this.runClaimed(claimed);
  }

  /** The claim is this executor's: the tool runs at most once here; what did not start goes back to the queue. */
  private async runClaimed(row: ExecutionRow): Promise<Outcome> {
    trace.getActiveSpan()?.setAttributes(endUser(row.user_id));
    this.running.add(row.execution_id);
    try {
      const started = performance.now();
      let prepared: Awaited<ReturnType<AsyncRuns['prepare']>>;
      try {
        prepared = await this.prepare(row);
      } catch (e) {
        // Nothing started yet: a passing failure (Postgres, credentials, registry) sends it back to the queue.
        if (!(e instanceof ToolplaneError) || e.retryable) return this.requeue(row, e);
        await this.records.finishDurably(
          row,
          errorResult(row.execution_id, e, started, row.trace_id),
          () => this.abandon.signal.aborted,
        );
        return 'done';
      }
      let result: ToolExecutionResult;
      try {
        result = await this.runner.run(prepared.tool, prepared.call, started, row.execution_id);
      } catch (e) {
        const err = asToolplaneError(e, this.log);
        if (NOT_STARTED_CODES.has(err.code) && row.attempts < this.config.EXECUTION_MAX_DELIVER && !this.stopped)
          return this.requeue(row, err);
        result = errorResult(row.execution_id, err, started, row.trace_id);
      }
      await this.records.finishDurably(row, result, () => this.abandon.signal.aborted);
      return 'done';
    } finally {
      this.running.delete(row.execution_id);
    }
  }

  /** The stored call (opened), its tool, and its args checked again (the tool may have changed since it was queued). */
  private async prepare(row: ExecutionRow): Promise<{ tool: Tool; call: CallRequest }> {
    const stored = await this.records.callOf(row);
    if (!stored)
      throw new ToolplaneError(
        ErrorCode.INTERNAL,
        `The stored call of execution ${row.execution_id} is gone`,
        undefined,
        false,
      );
    const { tool } = await this.catalog.find(row.org_id, { id: row.tool_id! });
    await step('validate args', () => this.args.check(row.org_id, tool, stored.args));
    const call: CallRequest = {
      org_id: row.org_id,
      args: stored.args,
      ...(row.agent_id ? { agent_id: row.agent_id } : {}),
      // The record keeps the end user: a queued call resolves that user's secrets when it runs.
      ...(row.user_id ? { user_id: row.user_id } : {}),
      ...(stored.env ? { env: stored.env } : {}),
      ...(row.timeout_ms ? { timeout_ms: row.timeout_ms } : {}),
    };
    return { tool, call };
  }

  /** Back to queued (the tool did not start); if even that fails the claim stays here and the next delivery takes it up. */
  private async requeue(row: ExecutionRow, why: unknown): Promise<Outcome> {
    this.log.warn(
      `async execution ${row.execution_id} did not start (${why instanceof ToolplaneError ? why.code : (why as Error).message}): queued again`,
    );
    await this.records.handBack(row).catch(() => undefined);
    return 'retry';
  }
}

function safeJson(m: JsMsg): unknown {
  try {
    return m.json();
  } catch {
    return undefined;
  }
}
