/**
 * Idempotency keys: a retry with the same key, tool and args answers the first call's outcome and
 * never runs the tool again — also while the first still runs, on another executor replica; the
 * same key with other args is IDEMPOTENCY_CONFLICT. Own stack (two executor replicas).
 */
import { randomUUID } from 'node:crypto';
import { expectEventually } from '@toolplane/testing';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { CALL_APPS, startApp, startStack, stopProcess, type Stack, type StackOptions } from '../support/stack';
import { ADD, pythonTool } from '../support/tools';

describe('idempotency keys', () => {
  const prefix = `${testPrefix()}idem`;
  const org = uniqueOrg('idem');
  let stack: Stack;
  let opts: StackOptions;
  let client: RawClient;
  const exec = (body: Record<string, unknown>, timeoutMs = 60_000) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs });
  /** Tool runs the runner has finished (every run, whatever became of its caller). */
  const runs = async () => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return [...text.matchAll(/^toolplane_runner_runs_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };

  beforeAll(async () => {
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
      // Info: each executor logs its instance id (the claim a record names).
      appEnv: { executor: { LOG_LEVEL: 'info' } },
    };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('fresh', 'import uuid\nreturn str(uuid.uuid4())', 'n: int') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code: pythonTool('slow_fresh', 'import time, uuid\ntime.sleep(3)\nreturn str(uuid.uuid4())', 'n: int'),
        },
      },
      30_000,
    );
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('elsewhere', 'return 1'), metadata_: { sandbox: 'modal' } } },
      30_000,
    );
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('answers a retry with the recorded outcome without running again', async () => {
    const key = randomUUID();
    const before = await runs();
    const first = await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key });
    expect(first.status).toBe('success');
    const again = await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key });
    expect(again).toEqual(first);
    // Argument order does not make another request.
    expect(await exec({ tool_name: 'add', args: { b: 1, a: 2 }, idempotency_key: `${key}-add` })).toMatchObject({
      func_return: 3,
    });
    const swapped = await exec({ tool_name: 'add', args: { a: 2, b: 1 }, idempotency_key: `${key}-add` });
    expect(swapped.func_return).toBe(3);
    expect(await runs()).toBe(before + 2);
    const rec = await recordOf(client, org, first.execution_id);
    expect(rec.execution).toMatchObject({ idempotency_key: key, status: 'succeeded' });
    expect(rec.result.func_return).toBe(first.func_return);
  });

  it('refuses the same key with other args or another tool: IDEMPOTENCY_CONFLICT, nothing runs', async () => {
    const key = randomUUID();
    const first = await exec({ tool_name: 'fresh', args: { n: 1 }, idempotency_key: key });
    const before = await runs();
    const other = await exec({ tool_name: 'fresh', args: { n: 2 }, idempotency_key: key });
    expect(other.error).toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      retryable: false,
      details: { execution_id: first.execution_id },
    });
    const otherTool = await exec({ tool_name: 'add', args: { a: 1 }, idempotency_key: key });
    expect(otherTool.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(await runs()).toBe(before);
    // Keys are per org: another org may use the same one.
    const org2 = uniqueOrg('idem2');
    await client.call('toolplane.v1.tools.upsert', { org_id: org2, tool: { source_code: ADD } }, 30_000);
    expect(
      (
        await client.req('toolplane.v1.tools.execute', {
          org_id: org2,
          tool_name: 'add',
          args: { a: 5 },
          idempotency_key: key,
        })
      ).func_return,
    ).toBe(7);
  });

  it('makes concurrent duplicates wait for the first call and share its outcome (one run)', async () => {
    const key = randomUUID();
    const before = await runs();
    const calls = Array.from({ length: 8 }, () =>
      exec({ tool_name: 'slow_fresh', args: { n: 3 }, idempotency_key: key }),
    );
    const results = await Promise.all(calls);
    for (const r of results) expect(r).toEqual(results[0]);
    expect(results[0].status).toBe('success');
    expect(await runs()).toBe(before + 1);
  });

  it('a duplicate served by another executor replica waits for the first replica’s outcome', async () => {
    const key = randomUUID();
    const before = await runs();
    const other = await startApp('executor', { ...opts, appEnv: { executor: { LOG_LEVEL: 'info' } } });
    const replicas = [stack.apps.get('executor')!, other];
    const call = exec({ tool_name: 'slow_fresh', args: { n: 4 }, idempotency_key: key });
    // The replica that claimed the call leaves the queue group (SIGTERM: it finishes what it runs); the other serves the duplicate.
    const running = await recordOf(client, org, await keyExecution(key), (r) => r.execution.status === 'running');
    const claimedBy = await claimOf(running.execution.execution_id);
    const first = replicas.find((a) => a.output().includes(`executor instance ${claimedBy}`))!;
    const second = replicas.find((a) => a !== first)!;
    const leaving = stopProcess(first.proc, 'SIGTERM');
    stack.apps.set('executor', second);
    const dup = await exec({ tool_name: 'slow_fresh', args: { n: 4 }, idempotency_key: key });
    const original = await call;
    expect(await leaving).toBe(0);
    expect(original.status).toBe('success');
    expect(dup).toEqual(original);
    expect(await runs()).toBe(before + 1);
  });

  it('lets a key go when its call failed before the tool started (a retry may run it)', async () => {
    const key = randomUUID();
    const a = await exec({ tool_name: 'elsewhere', args: {}, idempotency_key: key });
    expect(a.error.code).toBe('RUNNER_UNAVAILABLE');
    const b = await exec({ tool_name: 'elsewhere', args: {}, idempotency_key: key });
    expect(b.error.code).toBe('RUNNER_UNAVAILABLE');
    expect(b.error.details.execution_id).not.toBe(a.error.details.execution_id);
    expect((await recordOf(client, org, a.error.details.execution_id)).execution).toMatchObject({
      status: 'failed',
      error_code: 'RUNNER_UNAVAILABLE',
    });
  });

  it('answers an async retry with the first call’s execution and state', async () => {
    const key = randomUUID();
    const first = await exec({ tool_name: 'fresh', args: { n: 5 }, idempotency_key: key, mode: 'async' });
    expect(first).toEqual({ execution_id: expect.stringMatching(/^exec-/), status: 'queued' });
    const done = await recordOf(client, org, first.execution_id, (r) => r.execution.status === 'succeeded');
    const again = await exec({ tool_name: 'fresh', args: { n: 5 }, idempotency_key: key, mode: 'async' });
    expect(again).toEqual({ execution_id: first.execution_id, status: 'succeeded' });
    // A sync retry of it answers the result.
    expect(await exec({ tool_name: 'fresh', args: { n: 5 }, idempotency_key: key })).toEqual(done.result);
  });

  /** The executor instance a running record's claim names. */
  async function claimOf(executionId: string): Promise<string> {
    const db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    try {
      return (await db.query('SELECT claimed_by FROM executor.executions WHERE execution_id = $1', [executionId]))
        .rows[0].claimed_by;
    } finally {
      await db.end();
    }
  }

  /** The execution a key names, once its record exists (read through list: the call has not answered yet). */
  function keyExecution(key: string): Promise<string> {
    return expectEventually(
      async () => {
        const page = await client.call('toolplane.v1.executions.list', { org_id: org, limit: 20 }, 15_000);
        const hit = page.executions.find((e: any) => e.idempotency_key === key);
        if (!hit) throw new Error(`no execution with the idempotency key ${key} yet`);
        return hit.execution_id as string;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
  }
});
