import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type RUNNERS } from '@toolplane/contracts';
import { currentRequestSignal, type MessagingClient } from '@toolplane/messaging';
import { FairQueue } from './fair-queue';

/** A runner's abandonment broadcast: the run ids the executor gave up. */
type AbandonedEvent = (typeof RUNNERS)[keyof typeof RUNNERS]['abandoned'];

/**
 * The calls a remote runner (e2b, modal) serves: places given out fairly (FairQueue: at most
 * `limit` at once, `perOrg` per org, orgs in turn) and each call's abort signal, which fires when
 * the executor abandons its run id (the sealed broadcast) or the serving request ends (the
 * caller's deadline, this runner's shutdown). A call given up while it waits never takes a place.
 */
export class RunnerCalls {
  private readonly log = new Logger(RunnerCalls.name);
  private readonly queue: FairQueue;
  private readonly running = new Map<string, AbortController>();
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly messaging: MessagingClient,
    private readonly abandoned: AbandonedEvent,
    limit: number,
    perOrg: number | undefined,
    /** The runner's metrics: `queued` counts the calls waiting for their place. */
    private readonly gauge: { queued: number },
  ) {
    this.queue = new FairQueue(limit, perOrg ?? Math.max(1, Math.ceil((limit * 3) / 4)));
  }

  start(): void {
    this.sub = this.messaging.subscribeSealed(this.abandoned, ({ run_ids }) => {
      for (const id of run_ids) {
        const call = this.running.get(id);
        if (!call) continue;
        this.log.warn(`run ${id} was abandoned by the executor: stopping it`);
        call.abort(new ToolplaneError(ErrorCode.SERVICE_RESTARTING, 'the executor gave this call up'));
      }
    });
  }

  stop(): void {
    this.sub?.unsubscribe();
  }

  /** Runs `fn` with the call's abort signal; the signal is forgotten when `fn` settles. */
  async track<T>(runId: string | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    if (runId) this.running.set(runId, abort);
    const served = currentRequestSignal();
    const stop = () => abort.abort(served?.reason);
    served?.addEventListener('abort', stop, { once: true });
    try {
      return await fn(abort.signal);
    } finally {
      if (runId) this.running.delete(runId);
      served?.removeEventListener('abort', stop);
    }
  }

  /** Runs `fn` once the org's call has a place; a call given up while it waits answers the reason (or REQUEST_TIMEOUT). */
  async admitted<T>(org: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    this.gauge.queued++;
    let release: () => void;
    try {
      release = await this.queue.acquire(org, signal);
    } catch {
      throw signal.reason instanceof ToolplaneError
        ? signal.reason
        : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, 'the call was given up while it waited for its place');
    } finally {
      this.gauge.queued--;
    }
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
