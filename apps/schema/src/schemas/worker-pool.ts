import { parentPort, Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * Why a job got no result: its worker ran past the time limit (and was terminated), died, ran
 * out of memory, no worker took it in time or the queue was full, or the pool was closed.
 */
export type WorkerFailure = 'timeout' | 'crashed' | 'out_of_memory' | 'busy' | 'closed';

export class WorkerPoolError extends Error {
  constructor(
    readonly kind: WorkerFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WorkerPoolError';
  }
}

export interface WorkerPoolStats {
  ready: number;
  busy: number;
  queued: number;
  replaced: { timeout: number; crashed: number; out_of_memory: number };
}

export interface WorkerPoolOptions {
  /** The worker's script (a path or file URL), or its code with `eval: true`. It calls serveJobs(). */
  script: string | URL;
  eval?: boolean;
  workerData?: unknown;
  size: number;
  /** Budget of one job, from the moment a worker takes it; past it the worker is terminated and replaced. */
  timeLimitMs: number;
  /** Jobs that may wait for a worker; one more is refused at once ('busy'). */
  maxQueue: number;
  /** How long a job may wait for a worker ('busy' after that). */
  maxQueueWaitMs: number;
  resourceLimits?: ResourceLimits;
  /** Where worker deaths and restarts are reported. */
  log?: { warn(message: string): void; error(message: string): void };
}

interface Job {
  id: number;
  message: unknown;
  resolve(value: unknown): void;
  reject(error: WorkerPoolError | Error): void;
  timer?: NodeJS.Timeout;
}

interface PoolWorker {
  worker: Worker;
  ready: boolean;
  /** Set once the slot is gone (terminated, crashed): late events from its worker are ignored. */
  gone: boolean;
  job?: Job;
}

type FromWorker = { ready: true } | { id: number; result: unknown } | { id: number; thrown: string };

const RESPAWN_DELAY_MS = 1000;

/**
 * A fixed number of worker threads running jobs one at a time each, so that a job that never
 * ends costs its own time limit and a worker (terminated and replaced), never the caller's event
 * loop or another job. Jobs wait in a bounded FIFO queue for a free worker.
 */
export class WorkerPool {
  private readonly slots = new Set<PoolWorker>();
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private readonly replaced: Record<'timeout' | 'crashed' | 'out_of_memory', number> = {
    timeout: 0,
    crashed: 0,
    out_of_memory: 0,
  };
  private readonly startWaiters = new Map<PoolWorker, { resolve(): void; reject(e: Error): void }>();

  constructor(private readonly opts: WorkerPoolOptions) {}

  /** Starts every worker; resolves once all are ready, rejects if one cannot start. */
  async start(): Promise<void> {
    const started: Array<Promise<void>> = [];
    for (let i = 0; i < this.opts.size; i += 1) {
      const slot = this.spawn();
      started.push(new Promise((resolve, reject) => this.startWaiters.set(slot, { resolve, reject })));
    }
    try {
      await Promise.all(started);
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  /** Runs one job on the next free worker; resolves with what the worker's handler returned. */
  run(message: unknown): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new WorkerPoolError('closed', 'The worker pool is closed'));
      if (!this.idleSlot() && this.queue.length >= this.opts.maxQueue) {
        const n = this.queue.length;
        return reject(
          new WorkerPoolError(
            'busy',
            `All ${this.opts.size} workers are busy and ${n} job${n === 1 ? ' is' : 's are'} waiting`,
          ),
        );
      }
      const job: Job = { id: this.nextId++, message, resolve, reject };
      job.timer = setTimeout(() => {
        const at = this.queue.indexOf(job);
        if (at === -1) return;
        this.queue.splice(at, 1);
        reject(new WorkerPoolError('busy', `No worker was free within ${this.opts.maxQueueWaitMs} ms`));
      }, this.opts.maxQueueWaitMs);
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Workers that are ready, and how many of them run a job; jobs waiting; workers replaced so far, by cause. */
  get stats(): WorkerPoolStats {
    const ready = [...this.slots].filter((s) => s.ready);
    return {
      ready: ready.length,
      busy: ready.filter((s) => s.job).length,
      queued: this.queue.length,
      replaced: { ...this.replaced },
    };
  }

  /** Refuses new jobs, fails waiting and running ones ('closed') and terminates every worker. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.fail(job, new WorkerPoolError('closed', 'The worker pool is closed'));
    const slots = [...this.slots];
    this.slots.clear();
    await Promise.all(
      slots.map((slot) => {
        slot.gone = true;
        if (slot.job) this.fail(slot.job, new WorkerPoolError('closed', 'The worker pool is closed'));
        return slot.worker.terminate().catch(() => undefined);
      }),
    );
  }

  private idleSlot(): PoolWorker | undefined {
    for (const slot of this.slots) if (slot.ready && !slot.job) return slot;
    return undefined;
  }

  private dispatch(): void {
    for (let slot = this.idleSlot(); slot && this.queue.length > 0; slot = this.idleSlot()) {
      const job = this.queue.shift()!;
      clearTimeout(job.timer);
      slot.job = job;
      job.timer = setTimeout(() => this.timeOut(slot!), this.opts.timeLimitMs);
      slot.worker.postMessage({ id: job.id, message: job.message });
    }
  }

  private spawn(): PoolWorker {
    const worker = new Worker(this.opts.script, {
      eval: this.opts.eval ?? false,
      workerData: this.opts.workerData,
      resourceLimits: this.opts.resourceLimits,
    });
    const slot: PoolWorker = { worker, ready: false, gone: false };
    this.slots.add(slot);
    worker.on('message', (m: FromWorker) => this.onMessage(slot, m));
    worker.on('error', (e: Error & { code?: string }) => this.onDeath(slot, e));
    worker.on('exit', (code) => this.onDeath(slot, new Error(`exited with code ${code}`)));
    return slot;
  }

  private onMessage(slot: PoolWorker, m: FromWorker): void {
    if (slot.gone) return;
    if ('ready' in m) {
      slot.ready = true;
      this.startWaiters.get(slot)?.resolve();
      this.startWaiters.delete(slot);
      this.dispatch();
      return;
    }
    const job = slot.job;
    if (!job || job.id !== m.id) return;
    slot.job = undefined;
    clearTimeout(job.timer);
    if ('thrown' in m) job.reject(new Error(m.thrown));
    else job.resolve(m.result);
    this.dispatch();
  }

  private timeOut(slot: PoolWorker): void {
    if (slot.gone || !slot.job) return;
    const job = slot.job;
    this.retire(slot);
    void slot.worker.terminate().catch(() => undefined);
    job.reject(new WorkerPoolError('timeout', `The job exceeded its time limit of ${this.opts.timeLimitMs} ms`));
    this.replaced.timeout += 1;
    this.replace(0);
  }

  private onDeath(slot: PoolWorker, error: Error & { code?: string }): void {
    if (slot.gone) return;
    const wasReady = slot.ready;
    this.retire(slot);
    const starting = this.startWaiters.get(slot);
    if (starting) {
      this.startWaiters.delete(slot);
      return starting.reject(new Error(`A worker failed to start: ${error.message}`));
    }
    const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
    this.replaced[outOfMemory ? 'out_of_memory' : 'crashed'] += 1;
    this.opts.log?.error(
      `A worker ${outOfMemory ? 'ran out of memory' : `died (${error.message})`}${slot.job ? ' running a job' : ''}; starting another`,
    );
    if (slot.job) {
      clearTimeout(slot.job.timer);
      slot.job.reject(
        outOfMemory
          ? new WorkerPoolError(
              'out_of_memory',
              `The job needed more memory than a worker may use (${this.opts.resourceLimits?.maxOldGenerationSizeMb ?? '?'} MiB)`,
            )
          : new WorkerPoolError('crashed', `The worker running the job died: ${error.message}`),
      );
    }
    // A worker that dies before it is ready would die again at once: do not spin.
    this.replace(wasReady ? 0 : RESPAWN_DELAY_MS);
  }

  private retire(slot: PoolWorker): void {
    slot.gone = true;
    this.slots.delete(slot);
  }

  private replace(delayMs: number): void {
    if (this.closed) return;
    const spawn = (): void => {
      if (!this.closed) this.spawn();
    };
    if (delayMs > 0) setTimeout(spawn, delayMs).unref();
    else spawn();
  }

  private fail(job: Job, error: WorkerPoolError): void {
    clearTimeout(job.timer);
    job.reject(error);
  }
}

/**
 * The worker side: answers each job with `handler`'s result (or the message of what it threw),
 * once `ready` has resolved. Call it from the worker's script. The handler is synchronous: a job
 * holds its worker until it returns, which is what the time limit bounds.
 */
export function serveJobs(handler: (message: unknown) => unknown, ready: Promise<unknown> = Promise.resolve()): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs() runs in a worker thread');
  void ready.then(
    () => port.postMessage({ ready: true }),
    (e: unknown) => {
      throw e; // an uncaught error ends the worker: the pool sees it fail to start
    },
  );
  port.on('message', ({ id, message }: { id: number; message: unknown }) => {
    try {
      port.postMessage({ id, result: handler(message) });
    } catch (e) {
      // What the handler threw, or a result that cannot be cloned (DataCloneError).
      port.postMessage({ id, thrown: e instanceof Error ? e.message : String(e) });
    }
  });
}
