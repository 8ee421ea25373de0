import { WorkerPool, WorkerPoolError, type WorkerPoolOptions } from './worker-pool';

/**
 * A worker speaking the pool's protocol (as serveJobs does) whose jobs do what they say:
 * `{echo}` answers, `{hang}` never returns, `{backtrack}` runs a regex that backtracks for
 * ever, `{exit}` kills the worker, `{hog}` allocates until it runs out of memory.
 */
const FAKE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
if (workerData && workerData.failToStart) throw new Error('cannot load');
parentPort.postMessage({ ready: true });
parentPort.on('message', ({ id, message }) => {
  if (message.hang) for (;;) {}
  if (message.backtrack) /^(a+)+$/.test('a'.repeat(60) + '!');
  if (message.exit) process.exit(3);
  if (message.hog) { const keep = []; for (;;) keep.push(new Array(1e6).fill(keep.length)); }
  if (message.throw) return parentPort.postMessage({ id, thrown: 'it threw' });
  parentPort.postMessage({ id, result: { echo: message.echo, threadId: require('node:worker_threads').threadId } });
});
`;

const HOUR = 3_600_000;

describe('WorkerPool', () => {
  let sut: WorkerPool | undefined;
  const start = async (opts: Partial<WorkerPoolOptions> = {}): Promise<WorkerPool> => {
    sut = new WorkerPool({
      script: FAKE_WORKER,
      eval: true,
      size: 2,
      timeLimitMs: HOUR,
      maxQueue: 100,
      maxQueueWaitMs: HOUR,
      ...opts,
    });
    await sut.start();
    return sut;
  };
  const failure = async (p: Promise<unknown>): Promise<WorkerPoolError> => {
    try {
      await p;
    } catch (e) {
      if (e instanceof WorkerPoolError) return e;
      throw e;
    }
    throw new Error('expected a WorkerPoolError');
  };
  const untilReady = async (pool: WorkerPool, n: number): Promise<void> => {
    while (pool.stats.ready < n) await new Promise((r) => setTimeout(r, 10));
  };

  afterEach(async () => {
    await sut?.close();
    sut = undefined;
  });

  it('runs jobs on its workers and answers each with its result', async () => {
    const pool = await start();
    const results = (await Promise.all(Array.from({ length: 20 }, (_, i) => pool.run({ echo: i })))) as Array<{
      echo: number;
      threadId: number;
    }>;
    expect(results.map((r) => r.echo)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(new Set(results.map((r) => r.threadId)).size).toBe(2);
  });

  it('answers other jobs while one never ends: every one of them before it', async () => {
    const pool = await start();
    const settled: string[] = [];
    const hang = pool.run({ hang: true }).then(
      () => settled.push('hang'),
      () => settled.push('hang'),
    );
    const quick = Array.from({ length: 30 }, (_, i) => pool.run({ echo: i }).then(() => settled.push(`quick ${i}`)));
    await Promise.all(quick);
    expect(settled).toHaveLength(30);
    expect(settled).not.toContain('hang');
    await pool.close(); // the hanging job is answered only now
    await hang;
    expect(settled[30]).toBe('hang');
  });

  it('terminates a worker past the time limit, answers the job with a timeout and replaces the worker', async () => {
    const pool = await start({ size: 1, timeLimitMs: 1000 });
    const before = ((await pool.run({ echo: 'a' })) as { threadId: number }).threadId;
    const e = await failure(pool.run({ hang: true }));
    expect(e.kind).toBe('timeout');
    expect(e.message).toBe('The job exceeded its time limit of 1000 ms');
    const after = (await pool.run({ echo: 'b' })) as { echo: string; threadId: number };
    expect(after.echo).toBe('b');
    expect(after.threadId).not.toBe(before);
  });

  it('also stops a job inside a regular expression that backtracks for ever', async () => {
    const pool = await start({ size: 1, timeLimitMs: 1000 });
    expect((await failure(pool.run({ backtrack: true }))).kind).toBe('timeout');
    expect(await pool.run({ echo: 1 })).toMatchObject({ echo: 1 });
  });

  it('answers the job of a worker that dies, and of one that runs out of memory, and replaces them', async () => {
    const pool = await start({ size: 1, resourceLimits: { maxOldGenerationSizeMb: 32 } });
    expect(await failure(pool.run({ exit: true }))).toMatchObject({
      kind: 'crashed',
      message: 'The worker running the job died: exited with code 3',
    });
    expect(await pool.run({ echo: 1 })).toMatchObject({ echo: 1 });
    expect(await failure(pool.run({ hog: true }))).toMatchObject({ kind: 'out_of_memory' });
    expect(await pool.run({ echo: 2 })).toMatchObject({ echo: 2 });
  });

  it('rejects what the handler threw as a plain error (INTERNAL), keeping the worker', async () => {
    const pool = await start({ size: 1 });
    await expect(pool.run({ throw: true })).rejects.toThrow(new Error('it threw'));
    expect(await pool.run({ echo: 1 })).toMatchObject({ echo: 1 });
  });

  it('refuses a job when the queue is full, and one that waited too long for a worker', async () => {
    const full = await start({ size: 1, maxQueue: 1 });
    void full.run({ hang: true }).catch(() => undefined);
    const queued = full.run({ echo: 'queued' });
    expect(await failure(full.run({ echo: 'one too many' }))).toMatchObject({
      kind: 'busy',
      message: 'All 1 workers are busy and 1 job is waiting',
    });
    await full.close();
    expect((await failure(queued)).kind).toBe('closed');

    const slow = await start({ size: 1, maxQueueWaitMs: 100 });
    void slow.run({ hang: true }).catch(() => undefined);
    expect(await failure(slow.run({ echo: 'waits' }))).toMatchObject({
      kind: 'busy',
      message: 'No worker was free within 100 ms',
    });
  });

  it('keeps its size: a replaced worker is ready again', async () => {
    const pool = await start({ size: 2, timeLimitMs: 1000 });
    await Promise.all([failure(pool.run({ hang: true })), failure(pool.run({ exit: true }))]);
    await untilReady(pool, 2);
    expect(pool.stats).toEqual({
      ready: 2,
      busy: 0,
      queued: 0,
      replaced: { timeout: 1, crashed: 1, out_of_memory: 0 },
    });
  });

  it('fails to start when a worker cannot load, and refuses jobs once closed', async () => {
    const broken = new WorkerPool({
      script: FAKE_WORKER,
      eval: true,
      workerData: { failToStart: true },
      size: 2,
      timeLimitMs: HOUR,
      maxQueue: 1,
      maxQueueWaitMs: HOUR,
    });
    await expect(broken.start()).rejects.toThrow(/^A worker failed to start: cannot load/);
    expect((await failure(broken.run({ echo: 1 }))).kind).toBe('closed');
  });
});
