/**
 * Postgres and NATS restarted under an async backlog. Both run privately for this file (a cluster
 * and a nats-server of its own: the machine's shared ones serve every other test file at the same
 * time and must not be restarted). The tool counts its runs in a host file (runner-local with
 * RUNNER_ISOLATION=unsafe, trusted test tools only): no call may run twice.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { testPrefix, uniqueOrg } from '../support/context';
import { eventually } from '../support/executions';
import { RawClient } from '../support/nats-client';
import {
  startPrivateNats,
  startPrivatePostgres,
  type PrivateNats,
  type PrivatePostgres,
} from '../support/private-services';
import { CALL_APPS, startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

const FINAL = ['succeeded', 'failed', 'denied', 'expired'];

describe('async backlog across a Postgres restart and a NATS restart', () => {
  const prefix = `${testPrefix()}infra`;
  const org = uniqueOrg('infra');
  const dir = mkdtempSync(join(tmpdir(), 'tp-runs-'));
  const runsFile = join(dir, 'runs.log');
  let pg: PrivatePostgres;
  let nats: PrivateNats;
  let stack: Stack;
  let client: RawClient;

  const runsOf = (): Map<string, number> => {
    const counts = new Map<string, number>();
    if (!existsSync(runsFile)) return counts;
    for (const line of readFileSync(runsFile, 'utf8').split('\n').filter(Boolean))
      counts.set(line, (counts.get(line) ?? 0) + 1);
    return counts;
  };
  /** The records' states, read from the database itself (the API needs Postgres too). */
  const states = async (
    ids: readonly string[],
  ): Promise<Map<string, { status: string; error_code: string | null }>> => {
    const db = new Client({ connectionString: pg.url, connectionTimeoutMillis: 3000 });
    try {
      await db.connect();
      const r = await db.query(
        'SELECT execution_id, status, error_code FROM executor.executions WHERE execution_id = ANY($1)',
        [ids],
      );
      return new Map(r.rows.map((x) => [x.execution_id, { status: x.status, error_code: x.error_code }]));
    } catch {
      return new Map();
    } finally {
      await db.end().catch(() => undefined);
    }
  };
  const allFinal = (ids: readonly string[]) =>
    eventually(
      () => states(ids),
      (m) => ids.every((id) => FINAL.includes(m.get(id)?.status ?? '')),
      240_000,
      250,
    );
  const queue = async (tokens: readonly string[], seconds: number) => {
    const ids: string[] = [];
    for (const token of tokens) {
      const r = await client.call(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'counted', args: { token, seconds }, mode: 'async', timeout_ms: 5000 },
        30_000,
      );
      expect(r.status).toBe('queued');
      ids.push(r.execution_id);
    }
    return ids;
  };

  /** FAULT_FIGURES=1: one line of figures per test (states, runs, duplicate runs) on stderr. */
  const figures = (
    label: string,
    ids: string[],
    final: Map<string, { status: string; error_code: string | null }>,
    tokens: string[],
    counts: Map<string, number>,
  ) => {
    if (!process.env.FAULT_FIGURES) return;
    const states: Record<string, number> = {};
    for (const id of ids) {
      const f = final.get(id)!;
      const k = `${f.status}${f.error_code ? `/${f.error_code}` : ''}`;
      states[k] = (states[k] ?? 0) + 1;
    }
    const runs = tokens.reduce((n, t) => n + (counts.get(t) ?? 0), 0);
    const duplicates = tokens.filter((t) => (counts.get(t) ?? 0) > 1).length;
    process.stderr.write(
      `[figures] ${label}: ${ids.length} calls ${JSON.stringify(states)}, ${runs} runs, ${duplicates} run more than once\n`,
    );
  };

  beforeAll(async () => {
    chmodSync(dir, 0o777);
    writeFileSync(runsFile, '');
    chmodSync(runsFile, 0o666);
    [pg, nats] = await Promise.all([startPrivatePostgres(), startPrivateNats()]);
    stack = await startStack({
      prefix,
      databaseUrl: pg.url,
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn', NATS_URL: nats.url },
      appEnv: {
        executor: { EXECUTION_ACK_WAIT_MS: '3000', EXECUTION_REQUEUE_AFTER_MS: '3000', EXECUTION_SWEEP_MS: '200' },
        'runner-local': { RUNNER_ISOLATION: 'unsafe', RUNNER_MAX_CONCURRENCY: '16' },
      },
    });
    client = await RawClient.connect(prefix, {
      nats: { servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 },
    });
    const body = `import time\nwith open(${JSON.stringify(runsFile)}, "a") as f:\n    f.write(token + "\\n")\ntime.sleep(seconds)\nreturn token`;
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('counted', body, 'token: str, seconds: float') } },
      30_000,
    );
  }, 300_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stack?.stop();
    await nats?.destroy();
    pg?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('Postgres restarted during a backlog of 200 async calls: all complete, each exactly once', async () => {
    const tokens = Array.from({ length: 200 }, (_, i) => `pg-${i}-${randomUUID()}`);
    const ids = await queue(tokens, 0.05);
    await eventually(
      async () => tokens.filter((t) => runsOf().has(t)).length,
      (n) => n >= 20,
    );
    pg.stop('immediate');
    // Down long enough for claims, recordings, heartbeats and outbox drains to fail.
    await new Promise((r) => setTimeout(r, 3000));
    pg.start();
    const final = await allFinal(ids);
    const counts = runsOf();
    figures('postgres restart', ids, final, tokens, counts);
    expect(ids.filter((id) => final.get(id)!.status !== 'succeeded').map((id) => [id, final.get(id)])).toEqual([]);
    expect(tokens.filter((t) => counts.get(t) !== 1).map((t) => [t, counts.get(t) ?? 0])).toEqual([]);
  }, 300_000);

  it('NATS restarted during a backlog: JetStream keeps it, the services reconnect, nothing runs twice', async () => {
    const tokens = Array.from({ length: 100 }, (_, i) => `nats-${i}-${randomUUID()}`);
    const ids = await queue(tokens, 0.2);
    await eventually(
      async () => tokens.filter((t) => runsOf().has(t)).length,
      (n) => n >= 10,
    );
    await nats.stop();
    await new Promise((r) => setTimeout(r, 1000));
    await nats.start();
    const final = await allFinal(ids);
    const counts = runsOf();
    figures('nats restart', ids, final, tokens, counts);
    expect(tokens.filter((t) => (counts.get(t) ?? 0) > 1)).toEqual([]);
    // What was queued when NATS went away ran after it came back; a call in flight at that moment
    // may have lost its runner's reply (failed, never run again).
    const succeeded = ids.filter((id) => final.get(id)!.status === 'succeeded');
    const failed = ids.filter((id) => final.get(id)!.status !== 'succeeded').map((id) => final.get(id)!.error_code);
    expect(succeeded.length).toBeGreaterThanOrEqual(100 - 16);
    for (const code of failed)
      expect(['REQUEST_TIMEOUT', 'SERVICE_UNAVAILABLE', 'EXECUTOR_LOST', 'RUNNER_UNAVAILABLE']).toContain(code);
    for (const [i, id] of ids.entries())
      if (final.get(id)!.status === 'succeeded') expect(counts.get(tokens[i]!)).toBe(1);
    // The services are back: a sync call and an async call go through.
    const sync = await client.call(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'counted', args: { token: `after-${randomUUID()}`, seconds: 0 } },
      30_000,
    );
    expect(sync.status).toBe('success');
    const [later] = await queue([`after-async-${randomUUID()}`], 0);
    expect((await allFinal([later!])).get(later!)!.status).toBe('succeeded');
  }, 300_000);
});
