import type { PendingEvent } from '@toolplane/platform';
import type { ToolExecutionResult } from '@toolplane/contracts';
import { newTestService, type TestService } from '@toolplane/testing';
import { loadExecutorConfig } from '../executor.config';
import { ExecutionOutbox } from './execution-outbox';
import { ExecutionsRepository, type ExecutionRow } from './executions.repository';
import { ExecutorInstance } from './executor-instance';
import { MAX_SEALED_CHARS, PayloadSealer, type SealedPayload } from './payload-sealer';
import { RecordWriter } from './record-writer';
import { ExecutionRecords } from './records.service';

/**
 * The store's one door for moving a record: what a move writes, and in which transaction. The
 * repository, sealer and outbox are recorders (the SQL is covered by the e2e suites on Postgres).
 */
const row = (over: Partial<ExecutionRow> = {}): ExecutionRow =>
  ({
    execution_id: 'exec-1',
    org_id: 'acme',
    status: 'running',
    call_ref: 'call-1',
    attempts: 1,
    claimed_by: null,
    idempotency_key: null,
    ...over,
  }) as ExecutionRow;

const result = (funcReturn: unknown = 7): ToolExecutionResult =>
  ({
    execution_id: 'exec-1',
    status: 'success',
    func_return: funcReturn,
    stdout: [],
    stderr: [],
    provider: 'local',
    duration_ms: 3,
  }) as unknown as ToolExecutionResult;

class Store {
  /** Every write, in order; `tx` marks those made inside a transaction. */
  readonly log: string[] = [];
  readonly sealed: Array<{ orgId: string; value: unknown }> = [];
  readonly drained: string[] = [];
  moves = true;
  private inTx = false;

  repo(): Partial<ExecutionsRepository> {
    return {
      ds: 'ds' as never,
      transaction: async <T>(fn: (m: never) => Promise<T>) => {
        this.inTx = true;
        this.log.push('begin');
        try {
          const r = await fn('m' as never);
          this.log.push('commit');
          return r;
        } catch (e) {
          this.log.push('rollback');
          throw e;
        } finally {
          this.inTx = false;
        }
      },
      insertPayloads: async (_m, payloads) =>
        void this.log.push(`payload ${payloads.map((p) => p.payloadId).join(',')}`),
      transition: async (m, _org, id, from, set, claimedBy) => {
        this.log.push(
          `${(m as unknown) === 'ds' ? 'alone ' : ''}update ${from.join('|')} ${JSON.stringify(set)}${claimedBy ? ` claimed by ${claimedBy}` : ''}`,
        );
        return this.moves ? ({ ...row(), execution_id: id, ...set } as ExecutionRow) : undefined;
      },
      deletePayload: async (_m, id) => void this.log.push(`drop ${id}`),
    };
  }

  sealer(): Partial<PayloadSealer> {
    let n = 0;
    return {
      seal: async (orgId, _payloadId, value): Promise<SealedPayload> => {
        this.sealed.push({ orgId, value });
        return { payloadId: `sealed-${++n}`, orgId, keyId: 'k', blob: 'b' };
      },
    };
  }

  outbox(): Partial<ExecutionOutbox> {
    return {
      stage: async (_m, events: PendingEvent[]) =>
        void this.log.push(`${this.inTx ? '' : 'outside '}stage ${events.length}`),
      drain: async (orgId: string) => (this.drained.push(orgId), 0),
    };
  }
}

describe('ExecutionRecords.move (the one way a record changes state)', () => {
  let store: Store;
  let t: TestService<ExecutionRecords>;
  const event = (): PendingEvent[] => [{ eventId: 'e' } as PendingEvent];

  beforeEach(async () => {
    store = new Store();
    t = await newTestService(ExecutionRecords, {
      config: loadExecutorConfig({}),
      edges: [
        { provide: ExecutionsRepository, useValue: store.repo() },
        { provide: PayloadSealer, useValue: store.sealer() },
        { provide: ExecutionOutbox, useValue: store.outbox() },
        { provide: RecordWriter, useValue: {} },
        { provide: ExecutorInstance, useValue: { id: 'me', canJudgeOthers: () => true } },
      ],
    });
  });
  afterEach(() => t.close());

  it('keeps the sealed result, drops the stored call and stages the events in one transaction, then publishes', async () => {
    const sut = t.service;
    const moved = await sut.move(row({ status: 'awaiting_client' }), ['awaiting_client'], {
      set: { status: 'succeeded' },
      events: event,
      dropCall: true,
      result: result(),
    });
    expect(moved).toMatchObject({ status: 'succeeded', result_ref: 'sealed-1', call_ref: null });
    expect(store.sealed).toEqual([{ orgId: 'acme', value: { 'exec-1': result() } }]);
    expect(store.log).toEqual([
      'begin',
      'payload sealed-1',
      'update awaiting_client {"call_ref":null,"status":"succeeded","result_ref":"sealed-1"}',
      'drop call-1',
      'stage 1',
      'commit',
    ]);
    expect(store.drained).toEqual(['acme']);
  });

  it('records an outcome too large to keep without its value (result_ref null, nothing sealed)', async () => {
    await t.service.move(row(), ['running'], {
      set: { status: 'succeeded' },
      events: event,
      result: result('x'.repeat(MAX_SEALED_CHARS)),
    });
    expect(store.sealed).toEqual([]);
    expect(store.log).toContain('update running {"status":"succeeded","result_ref":null}');
  });

  it('replaces the stored call with a new sealed one (corrected args), dropping the old', async () => {
    await t.service.move(row({ status: 'pending_approval' }), ['pending_approval'], {
      set: { status: 'queued' },
      events: event,
      call: { args: { x: 2 } },
    });
    expect(store.sealed).toEqual([{ orgId: 'acme', value: { args: { x: 2 } } }]);
    expect(store.log).toEqual([
      'begin',
      'payload sealed-1',
      'update pending_approval {"call_ref":"sealed-1","status":"queued"}',
      'drop call-1',
      'stage 1',
      'commit',
    ]);
  });

  it('stages, drops and publishes nothing when another executor moved the record first', async () => {
    store.moves = false;
    expect(
      await t.service.move(row(), ['running'], { set: { status: 'failed' }, events: event, dropCall: true }),
    ).toBeUndefined();
    expect(store.log).toEqual(['begin', 'update running {"call_ref":null,"status":"failed"}', 'rollback']);
    expect(store.drained).toEqual([]);
  });

  it('rolls back the result it sealed for a move another executor won (no orphaned payload committed)', async () => {
    store.moves = false;
    expect(await t.service.finish(row(), result())).toBeUndefined();
    expect(store.log[0]).toBe('begin');
    expect(store.log[1]).toBe('payload sealed-1');
    expect(store.log.at(-1)).toBe('rollback');
    expect(store.log).not.toContain('commit');
    expect(store.drained).toEqual([]);
  });

  it('claims and hands back a queued call with one UPDATE and no transaction (nothing to announce)', async () => {
    const sut = t.service;
    await sut.claimQueued(row({ status: 'queued', attempts: 2 }));
    await sut.handBack(row());
    expect(store.log).toEqual([
      'alone update queued {"status":"running","claimed_by":"me","attempts":3,"nowColumns":["started_at"]}',
      'alone update running {"status":"queued","claimed_by":null,"nowColumns":["queued_at"]} claimed by me',
    ]);
  });

  it('finishes a claimed run through the same path: its claim checked, its result sealed, its outcome announced', async () => {
    const moved = await t.service.finish(row(), result());
    expect(moved).toMatchObject({ status: 'succeeded', result_ref: 'sealed-1', call_ref: null });
    expect(store.sealed).toHaveLength(1);
    expect(store.log[2]).toMatch(/^update running .*"result_ref":"sealed-1".* claimed by me$/);
    expect(store.log.slice(3)).toEqual(['drop call-1', 'stage 1', 'commit']);
    expect(store.drained).toEqual(['acme']);
  });

  it('expires a pending approval: its call dropped, its outcome announced', async () => {
    await t.service.expire(row({ status: 'pending_approval' }));
    expect(store.log).toEqual([
      'begin',
      'update pending_approval {"call_ref":null,"status":"expired","error_code":"EXECUTION_EXPIRED","nowColumns":["finished_at"]}',
      'drop call-1',
      'stage 1',
      'commit',
    ]);
  });
});
