/**
 * An executor killed (SIGKILL) in the middle of calls: a sync caller gets a typed error (its
 * timeout) and an idempotent retry gets the recorded outcome (EXECUTOR_LOST), never a second run;
 * async calls end succeeded once or failed/EXECUTOR_LOST — a tool declared idempotent runs again.
 * Two executor replicas; the one killed is the one whose claim the call's record names. The tool
 * itself counts its runs (a line per run in a host file: runner-local with RUNNER_ISOLATION=unsafe,
 * the test's own stack, trusted test tools only).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventually, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, stopProcess, type RunningApp, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';

const EXECUTOR_ENV = {
  LOG_LEVEL: 'info',
  EXECUTOR_HEARTBEAT_MS: '200',
  EXECUTOR_LOST_AFTER_MS: '1500',
  EXECUTION_SWEEP_MS: '200',
  EXECUTION_ACK_WAIT_MS: '3000',
  EXECUTION_REQUEUE_AFTER_MS: '3000',
  EXECUTION_ASYNC_CONCURRENCY: '2',
};

describe('executor killed mid-call: no call lost, none run twice', () => {
  const prefix = `${testPrefix()}kill`;
  const org = uniqueOrg('kill');
  const dir = mkdtempSync(join(tmpdir(), 'tp-runs-'));
  const runsFile = join(dir, 'runs.log');
  let stack: Stack;
  let opts: StackOptions;
  let client: RawClient;
  let db: Client;
  /** The executor replicas alive now. */
  let executors: RunningApp[] = [];

  /** How many times each token's call ran (lines the tool wrote). */
  const runsOf = (): Map<string, number> => {
    const counts = new Map<string, number>();
    if (!existsSync(runsFile)) return counts;
    for (const line of readFileSync(runsFile, 'utf8').split('\n').filter(Boolean))
      counts.set(line, (counts.get(line) ?? 0) + 1);
    return counts;
  };
  const final = (r: any) => ['succeeded', 'failed', 'denied', 'expired'].includes(r.execution.status);
  const startExecutor = async () => {
    const app = await startApp('executor', { ...opts, appEnv: { executor: EXECUTOR_ENV } });
    executors.push(app);
    return app;
  };
  /** The executor holding the claim of a running call whose tool has started: the one to kill. */
  const claimerOf = async (executionId: string, token: string): Promise<RunningApp> => {
    const claimedBy = await eventually(
      async () =>
        (
          await db.query(`SELECT claimed_by FROM executor.executions WHERE execution_id = $1 AND status = 'running'`, [
            executionId,
          ])
        ).rows[0]?.claimed_by as string | undefined,
      (id) => id !== undefined && runsOf().has(token),
    );
    const app = executors.find((a) => a.output().includes(`executor instance ${claimedBy}`));
    if (!app) throw new Error(`no running executor has instance ${claimedBy}`);
    return app;
  };
  /** SIGKILL, then a fresh replica in its place (started only after the kill: no race with the call). */
  const kill = async (victim: RunningApp) => {
    await stopProcess(victim.proc, 'SIGKILL');
    executors = executors.filter((a) => a !== victim);
    await startExecutor();
  };

  beforeAll(async () => {
    chmodSync(dir, 0o777);
    writeFileSync(runsFile, '');
    chmodSync(runsFile, 0o666);
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local'],
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'runner-local': { RUNNER_ISOLATION: 'unsafe', RUNNER_MAX_CONCURRENCY: '16' } },
    };
    stack = await startStack(opts);
    await Promise.all([startExecutor(), startExecutor()]);
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    client = await RawClient.connect(prefix);
    const body = `import time\nwith open(${JSON.stringify(runsFile)}, "a") as f:\n    f.write(token + "\\n")\ntime.sleep(seconds)\nreturn token`;
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('counted', body, 'token: str, seconds: float') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code: pythonTool('counted_again', body, 'token: str, seconds: float'),
          metadata_: { idempotent: true },
        },
      },
      30_000,
    );
  }, 300_000);
  afterAll(async () => {
    await client?.close();
    await db?.end();
    await Promise.all(executors.map((a) => stopProcess(a.proc)));
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('sync: the caller gets a typed error by its timeout, and an idempotent retry gets EXECUTOR_LOST — one run', async () => {
    const token = `sync-${randomUUID()}`;
    const key = randomUUID();
    const outcome = client
      .req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'counted', args: { token, seconds: 5 }, idempotency_key: key },
        { timeoutMs: 8000 },
      )
      .then(
        (r) => ({ reply: r }),
        (e: Error) => ({ error: e }),
      );
    const { rows } = await eventually(
      () =>
        db.query('SELECT execution_id FROM executor.executions WHERE org_id = $1 AND idempotency_key = $2', [org, key]),
      (r) => r.rows.length === 1,
    );
    await kill(await claimerOf(rows[0].execution_id, token));
    const first = await outcome;
    // Nothing more came from the dead executor: the caller's own timeout ended the wait (a typed NATS timeout).
    expect('error' in first ? first.error.name : first.reply).toMatch(/TimeoutError|RequestError/);
    const retry = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'counted', args: { token, seconds: 5 }, idempotency_key: key },
      { timeoutMs: 60_000 },
    );
    expect(retry).toMatchObject({
      status: 'error',
      execution_id: rows[0].execution_id,
      error: { code: 'EXECUTOR_LOST' },
    });
    const rec = await recordOf(client, org, retry.execution_id);
    expect(rec.execution).toMatchObject({ status: 'failed', error_code: 'EXECUTOR_LOST', idempotency_key: key });
    expect(runsOf().get(token)).toBe(1);
  }, 300_000);

  it('async: calls of a killed executor end succeeded once or failed/EXECUTOR_LOST, none run twice', async () => {
    const tokens = Array.from({ length: 8 }, (_, i) => `async-${i}-${randomUUID()}`);
    const ids: string[] = [];
    for (const token of tokens)
      ids.push(
        (
          await client.call(
            'toolplane.v1.tools.execute',
            { org_id: org, tool_name: 'counted', args: { token, seconds: 3 }, mode: 'async' },
            30_000,
          )
        ).execution_id,
      );
    // Each replica takes two at a time (EXECUTION_ASYNC_CONCURRENCY=2): kill the one running the first call.
    await kill(await claimerOf(ids[0]!, tokens[0]!));
    const records = await Promise.all(ids.map((id) => recordOf(client, org, id, final, 120_000)));
    const counts = runsOf();
    const statuses = records.map((r) => `${r.execution.status}/${r.execution.error_code ?? ''}`);
    if (process.env.FAULT_FIGURES) {
      const duplicates = tokens.filter((t) => (counts.get(t) ?? 0) > 1).length;
      process.stderr.write(
        `[figures] async SIGKILL: ${JSON.stringify(statuses)}, ${tokens.reduce((n, t) => n + (counts.get(t) ?? 0), 0)} runs, ${duplicates} run more than once\n`,
      );
    }
    for (const [i, r] of records.entries()) {
      const runs = counts.get(tokens[i]!) ?? 0;
      expect([tokens[i], runs <= 1]).toEqual([tokens[i], true]);
      if (r.execution.status === 'succeeded') expect(runs).toBe(1);
      else expect(r.execution.error_code).toBe('EXECUTOR_LOST');
    }
    // The first call was running on the killed executor: settled as lost; others ran to success.
    expect(records[0].execution).toMatchObject({ status: 'failed', error_code: 'EXECUTOR_LOST' });
    expect(statuses).toContain('succeeded/');
  }, 300_000);

  it('async: a tool declared idempotent (metadata_.idempotent) whose executor died runs again to success', async () => {
    const token = `again-${randomUUID()}`;
    const id = (
      await client.call(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'counted_again', args: { token, seconds: 3 }, mode: 'async' },
        30_000,
      )
    ).execution_id;
    await kill(await claimerOf(id, token));
    const done = await recordOf(client, org, id, final, 120_000);
    expect(done.execution.status).toBe('succeeded');
    expect(done.result.func_return).toBe(token);
    expect(runsOf().get(token)).toBe(2);
  }, 300_000);
});
