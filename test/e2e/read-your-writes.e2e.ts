import { newExecutionId } from '../../apps/executor/src/records/execution-id';
import { uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startCallStack, type Stack } from '../support/stack';
import { ADD } from '../support/tools';

/**
 * Read your writes across executor replicas: a sync call without an idempotency key answers before
 * its record is written (write-behind, by the replica that ran it), yet the id it answers with can
 * be read at once — an `executions.get` sent the instant the reply arrives, to whichever of two
 * replicas the queue group hands it (the one holding the record in its write-behind queue writes
 * it then; the other re-reads until it is in), is never EXECUTION_NOT_FOUND. An id no call was
 * answered with is still not found, and another org never reads the record.
 */
describe('read your writes: an execution id is readable the moment it is handed out', () => {
  const prefix = `ryw${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('ryw');
  let stack: Stack;
  let client: RawClient;

  const execute = (o: string, args: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: o, tool_name: 'add', args }, { timeoutMs: 60_000 });
  const get = (o: string, executionId: string) =>
    client.req('toolplane.v1.executions.get', { org_id: o, execution_id: executionId }, { timeoutMs: 60_000 });
  /** An execution id (UUIDv7, as the executor makes them) of `agoMs` ago that no call was answered with. */
  const forged = (agoMs: number) => newExecutionId(Date.now() - agoMs);

  beforeAll(async () => {
    stack = await startCallStack(prefix);
    await stack.addReplica('executor');
    client = await RawClient.connect(prefix);
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 60_000);
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('answers 1,000 gets sent at the instant of each reply, over two replicas, with the record of that call', async () => {
    const N = 1000;
    const notFound: string[] = [];
    const wrong: unknown[] = [];
    let next = 0;
    const worker = async () => {
      while (next < N) {
        const i = next++;
        const r = await execute(org, { a: i, b: 1 });
        if (r.status !== 'success') {
          wrong.push(r);
          continue;
        }
        const got = await get(org, r.execution_id);
        if (got.error?.code === 'EXECUTION_NOT_FOUND') notFound.push(r.execution_id);
        else if (
          got.error ||
          got.execution.execution_id !== r.execution_id ||
          got.execution.status !== 'succeeded' ||
          got.result?.func_return !== i + 1
        )
          wrong.push(got);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(wrong.slice(0, 3)).toEqual([]);
    expect(notFound.slice(0, 3)).toEqual([]);
    expect(notFound).toHaveLength(0);
  }, 300_000);

  it('never shows a fresh record to another org, and answers an id no call was answered with EXECUTION_NOT_FOUND', async () => {
    const r = await execute(org, { a: 20, b: 22 });
    expect(r).toMatchObject({ status: 'success', func_return: 42 });
    const intruder = uniqueOrg('rywx');
    const [theirs, fresh, old, mine] = await Promise.all([
      get(intruder, r.execution_id),
      get(org, forged(0)),
      get(org, forged(3600_000)),
      get(org, r.execution_id),
    ]);
    expect(theirs.error).toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
    expect(JSON.stringify(theirs)).not.toContain('"func_return"');
    expect(fresh.error).toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
    expect(old.error).toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
    expect(mine.execution).toMatchObject({ execution_id: r.execution_id, status: 'succeeded' });
    // Once written, still another org's to never see.
    expect((await get(intruder, r.execution_id)).error).toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
  }, 120_000);
});
