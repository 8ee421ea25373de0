import type { ToolExecutionResult } from '@toolplane/contracts';
import type { MessagingClient } from '@toolplane/messaging';
import type { ExecutorConfig } from '../executor.config';
import type { ExecutionOutbox } from './execution-outbox';
import type { ExecutionsRepository, NewExecutionRow } from './executions.repository';
import type { PayloadSealer, SealedPayload } from './payload-sealer';
import { RecordWriter, type FinishedCall } from './record-writer';

/**
 * The write-behind's batching, with its storage replaced by recorders (the SQL it sends is
 * covered by the e2e suites on the real Postgres): what it writes together, and when.
 */
const WINDOW_MS = 200;

function finished(i: number, org = 'acme'): FinishedCall {
  return {
    row: { execution_id: `exec-${i}`, org_id: org } as NewExecutionRow,
    result: { status: 'success', func_return: i } as unknown as ToolExecutionResult,
  };
}

function writerWith(batch: number) {
  const inserted: string[][] = [];
  const sealed: string[] = [];
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  const repo = {
    transaction: async (fn: (m: unknown) => Promise<void>) => {
      await gate;
      await fn({});
    },
    insertPayloads: async () => undefined,
    insert: async (_m: unknown, rows: NewExecutionRow[]) => {
      inserted.push(rows.map((r) => r.execution_id));
    },
  } as unknown as ExecutionsRepository;
  const sealer = {
    seal: async (orgId: string, payloadId: string): Promise<SealedPayload> => {
      sealed.push(orgId);
      return { payloadId, orgId, keyId: 'k', blob: 'b' };
    },
  } as unknown as PayloadSealer;
  const config = {
    EXECUTION_WRITE_BEHIND_MS: WINDOW_MS,
    EXECUTION_WRITE_BEHIND_BATCH: batch,
    EXECUTION_WRITE_BEHIND_MAX: 10_000,
    EXECUTION_SYNC_EVENTS: false,
    EXECUTION_RESULT_RETENTION_MS: 1000,
    SHUTDOWN_GRACE_MS: 0,
  } as ExecutorConfig;
  const writer = new RecordWriter(repo, sealer, {} as ExecutionOutbox, config, {} as MessagingClient);
  return {
    writer,
    inserted,
    sealed,
    /** The next transactions wait until release() is called. */
    hold: () => {
      gate = new Promise<void>((r) => (release = r));
    },
    release: () => {
      gate = undefined;
      release?.();
    },
  };
}

/** Lets every settled promise run its continuations (fake timers do not advance them). */
const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('RecordWriter (write-behind batching)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('writes the calls of one window in one transaction with one seal per org', async () => {
    const sut = writerWith(256);
    for (let i = 0; i < 5; i++) await sut.writer.add(finished(i, i % 2 ? 'acme' : 'globex'));
    expect(sut.inserted).toEqual([]);
    await jest.advanceTimersByTimeAsync(WINDOW_MS);
    await settle();
    expect(sut.inserted).toEqual([['exec-0', 'exec-1', 'exec-2', 'exec-3', 'exec-4']]);
    expect(sut.sealed.sort()).toEqual(['acme', 'globex']);
  });

  it('does not chain a transaction per call while a write is in flight: what arrives meanwhile waits for its own window', async () => {
    const sut = writerWith(256);
    await sut.writer.add(finished(0));
    sut.hold();
    await jest.advanceTimersByTimeAsync(WINDOW_MS); // the first write starts and waits on the gate
    for (let i = 1; i <= 3; i++) await sut.writer.add(finished(i));
    sut.release();
    await settle();
    expect(sut.inserted).toEqual([['exec-0']]);
    expect(sut.writer.pending).toBe(3);
    await jest.advanceTimersByTimeAsync(WINDOW_MS);
    await settle();
    expect(sut.inserted).toEqual([['exec-0'], ['exec-1', 'exec-2', 'exec-3']]);
    expect(sut.sealed).toHaveLength(2);
  });

  it('writes at once, without waiting for the window, once a full batch is waiting', async () => {
    const sut = writerWith(3);
    await sut.writer.add(finished(0));
    sut.hold();
    await jest.advanceTimersByTimeAsync(WINDOW_MS);
    for (let i = 1; i <= 3; i++) await sut.writer.add(finished(i));
    sut.release();
    await settle();
    expect(sut.inserted).toEqual([['exec-0'], ['exec-1', 'exec-2', 'exec-3']]);
    expect(sut.writer.pending).toBe(0);
  });

  it('writes a queued record at once when a reader asks for it, and wakes the reader once it is in', async () => {
    const sut = writerWith(256);
    await sut.writer.add(finished(0));
    await sut.writer.add(finished(1, 'globex'));
    // Another org's reader, or an id this writer does not hold: nothing to wait for here.
    expect(sut.writer.written('acme', 'exec-1')).toBeUndefined();
    expect(sut.writer.written('acme', 'exec-9')).toBeUndefined();
    sut.hold();
    let woken = false;
    const read = sut.writer.written('acme', 'exec-0')!.then(() => (woken = true));
    await settle();
    // The write started without the window passing; the reader waits for its commit.
    expect(woken).toBe(false);
    sut.release();
    await read;
    expect(sut.inserted).toEqual([['exec-0', 'exec-1']]);
    expect(sut.writer.written('acme', 'exec-0')).toBeUndefined();
  });

  it('retries a batch whose first commit went in but was not acknowledged without failing on its own rows (insert if absent)', async () => {
    const sut = writerWith(256);
    const modes: unknown[] = [];
    const repo = (sut.writer as unknown as { repo: { insert: unknown } }).repo;
    let calls = 0;
    repo.insert = async (_m: unknown, rows: NewExecutionRow[], opts: unknown) => {
      modes.push(opts);
      sut.inserted.push(rows.map((r) => r.execution_id));
      if (++calls === 1) throw new Error('Connection terminated unexpectedly'); // committed, ack lost
    };
    await sut.writer.add(finished(0));
    await jest.advanceTimersByTimeAsync(WINDOW_MS);
    await settle();
    await jest.advanceTimersByTimeAsync(5000);
    await settle();
    expect(sut.inserted).toEqual([['exec-0'], ['exec-0']]);
    expect(modes).toEqual([{ ifAbsent: true }, { ifAbsent: true }]);
    expect(sut.writer.pending).toBe(0);
  });
});
