/**
 * Fault suite, processes (issue 19): a runner, an executor and the registry killed (SIGKILL) at the
 * worst moment, on a stack this file starts so it can kill its processes (its own subject prefix on
 * the run's NATS and database). Each scenario asserts what the caller saw and what was stored, and
 * writes a report row (test/support/faults.ts); FAULT_REPEAT repeats each one
 * (`npm run reliability:faults`).
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventually, recordOf } from '../support/executions';
import {
  descendantsOf,
  eventsOn,
  perScenario,
  repeatScenario,
  RunLog,
  runnerCgroupsOf,
  sawOf,
  stillAlive,
} from '../support/faults';
import { RawClient } from '../support/nats-client';
import {
  CALL_APPS,
  metricOf,
  startApp,
  startStack,
  stopProcess,
  type AppName,
  type RunningApp,
  type Stack,
  type StackOptions,
} from '../support/stack';
import { pythonTool } from '../support/tools';

const EXECUTOR_ENV = {
  EXECUTOR_HEARTBEAT_MS: '200',
  EXECUTOR_LOST_AFTER_MS: '1500',
  EXECUTION_SWEEP_MS: '200',
  EXECUTION_ACK_WAIT_MS: '3000',
  EXECUTION_REQUEUE_AFTER_MS: '3000',
  RUNNER_REPLY_MARGIN_MS: '1000',
};
const FINAL = ['succeeded', 'failed', 'denied', 'expired'];
/** What a caller may see when the process serving it died: a typed reply or the client's own typed timeout. */
const TYPED_CLIENT_ERRORS = /^client (TimeoutError|RequestError|NoRespondersError)$/;

describe('faults: processes killed mid-call', () => {
  const prefix = `${testPrefix()}fp`;
  const org = uniqueOrg('faults');
  const runs = new RunLog();
  let opts: StackOptions;
  let stack: Stack;
  let client: RawClient;
  let db: Client;
  /** Apps this file started outside the stack (replacements of killed ones). */
  const own = new Map<AppName, RunningApp>();

  /** SIGKILL an app (wherever it was started), and forget it. */
  const kill = async (name: AppName): Promise<void> => {
    const victim = own.get(name) ?? stack.apps.get(name);
    if (!victim) return;
    own.delete(name);
    stack.apps.delete(name);
    await stopProcess(victim.proc, 'SIGKILL');
  };
  const restart = async (name: AppName, env: Record<string, string> = {}): Promise<RunningApp> => {
    const started = await startApp(name, {
      ...opts,
      appEnv: { ...opts.appEnv, [name]: { ...opts.appEnv?.[name], ...env } },
    });
    own.set(name, started);
    return started;
  };
  const execute = (body: Record<string, unknown>, timeoutMs: number) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs }).catch((e: Error) => e);
  /** The records of the org's calls with this idempotency key (what is stored). */
  const executionOf = async (key: string) =>
    (
      await db.query(
        `SELECT execution_id, status, error_code FROM executor.executions WHERE org_id = $1 AND idempotency_key = $2`,
        [org, key],
      )
    ).rows as Array<{ execution_id: string; status: string; error_code: string | null }>;

  beforeAll(async () => {
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
      readyTimeoutMs: 120_000,
      appEnv: {
        executor: EXECUTOR_ENV,
        // Trusted test tools only: the run log is a host file (see RunLog).
        'runner-local': { RUNNER_ISOLATION: 'unsafe', RUNNER_MAX_CONCURRENCY: '8' },
        registry: { REGISTRY_OUTBOX_RELAY_MS: '200', REGISTRY_OUTBOX_RELAY_AFTER_MS: '200' },
      },
    };
    stack = await startStack(opts);
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    client = await RawClient.connect(prefix);
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('counted', runs.toolBody, 'token: str, seconds: float') } },
      30_000,
    );
    await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code: pythonTool('sleeper', 'import time\ntime.sleep(seconds)\nreturn seconds', 'seconds: float'),
        },
      },
      30_000,
    );
  }, 240_000);
  afterAll(async () => {
    await client?.close();
    await db?.end();
    await Promise.all([...own.values()].map((a) => stopProcess(a.proc)));
    await stack?.stop();
    runs.remove();
  }, 60_000);

  it(
    'runner SIGKILLed mid-call: a typed retryable error within the timeout, no orphaned sandbox, the next call succeeds',
    async () => {
      // This scenario runs the runner as shipped (bubblewrap sandboxes), then gives the others back the unsafe one.
      await kill('runner-local');
      let runner = await restart('runner-local', { RUNNER_ISOLATION: 'bwrap' });
      try {
        await repeatScenario('runner-local SIGKILL mid-call', async () => {
          const key = randomUUID();
          const started = Date.now();
          const pending = execute(
            { tool_name: 'sleeper', args: { seconds: 30 }, timeout_ms: 4000, idempotency_key: key },
            30_000,
          );
          await eventually(
            () => metricOf(runner, 'toolplane_runner_pool_busy_slots'),
            (n) => n >= 1,
            30_000,
          );
          const killedPid = runner.proc.pid!;
          const tree = descendantsOf(killedPid);
          expect(tree.length).toBeGreaterThan(0);
          const groups = runnerCgroupsOf(killedPid);
          await kill('runner-local');
          const r = await pending;
          const waited = Date.now() - started;
          // The executor answered, typed and retryable, before the caller's own timeout.
          expect(r).not.toBeInstanceOf(Error);
          expect(r).toMatchObject({
            error: {
              code: expect.stringMatching(/^(RUNNER_UNAVAILABLE|REQUEST_TIMEOUT|SANDBOX_LOST)$/),
              retryable: true,
            },
          });
          // Every process the runner had (its sandboxes and the tool in one) went with it.
          const orphans = await eventually(
            async () => stillAlive(tree),
            (left) => left.length === 0,
            10_000,
          ).catch(() => stillAlive(tree));
          expect(orphans).toEqual([]);
          const [rec] = await eventually(
            () => executionOf(key),
            (rows) => rows.length === 1 && FINAL.includes(rows[0]!.status),
          );
          // A fresh runner (what a replica or the supervisor gives): the next call succeeds, no slot left busy.
          runner = await restart('runner-local', { RUNNER_ISOLATION: 'bwrap' });
          const next = await execute({ tool_name: 'sleeper', args: { seconds: 0 }, timeout_ms: 10_000 }, 30_000);
          expect(next).toMatchObject({ status: 'success', func_return: 0 });
          expect(
            await eventually(
              () => metricOf(runner, 'toolplane_runner_pool_busy_slots'),
              (n) => n === 0,
              10_000,
            ),
          ).toBe(0);
          // The slots' cgroups of the dead runner are gone too (the new runner removes stale ones at start).
          const leftGroups = await eventually(
            async () => runnerCgroupsOf(killedPid),
            (g) => g.length === 0,
            10_000,
          ).catch(() => runnerCgroupsOf(killedPid));
          expect(leftGroups).toEqual([]);
          return {
            saw: `${sawOf(r)} after ${Math.round(waited / 100) / 10} s (timeout_ms 4 s); next call ${sawOf(next)}`,
            stored: `record ${rec!.status}/${rec!.error_code}; ${tree.length} runner child processes, ${orphans.length} orphaned; ${groups.length} slot cgroups, ${leftGroups.length} left; busy slots 0 after`,
          };
        });
      } finally {
        await kill('runner-local');
        await restart('runner-local');
      }
    },
    perScenario(180_000),
  );

  it(
    'executor SIGKILLed mid-call (sync): a typed client timeout, the record settles EXECUTOR_LOST, one run',
    async () => {
      await repeatScenario('executor SIGKILL mid-call (sync)', async () => {
        const token = `sync-${randomUUID()}`;
        const key = randomUUID();
        const pending = execute({ tool_name: 'counted', args: { token, seconds: 3 }, idempotency_key: key }, 6000);
        await eventually(
          async () => runs.runs(token),
          (n) => n === 1,
          30_000,
        );
        await kill('executor');
        const r = await pending;
        expect(sawOf(r)).toMatch(TYPED_CLIENT_ERRORS);
        await restart('executor');
        // Nothing stuck in running: the new executor's sweeper settles the dead one's record.
        const [rec] = await eventually(
          () => executionOf(key),
          (rows) => rows.length === 1 && FINAL.includes(rows[0]!.status),
          60_000,
        );
        expect(rec).toMatchObject({ status: 'failed', error_code: 'EXECUTOR_LOST' });
        // An idempotent retry gets the recorded outcome, never a second run.
        const retry = await execute(
          { tool_name: 'counted', args: { token, seconds: 3 }, idempotency_key: key },
          30_000,
        );
        expect(retry).toMatchObject({ status: 'error', error: { code: 'EXECUTOR_LOST' } });
        // Let the killed call's tool end (it sleeps 3 s) before counting: it must not have run again.
        await new Promise((res) => setTimeout(res, 500));
        expect(runs.runs(token)).toBe(1);
        return {
          saw: `${sawOf(r)}; idempotent retry ${sawOf(retry)}`,
          stored: `record ${rec!.status}/${rec!.error_code}; ${runs.runs(token)} run`,
        };
      });
    },
    perScenario(180_000),
  );

  it(
    'executor SIGKILLed mid-call (async): the record ends failed/EXECUTOR_LOST, never stuck in running, one run',
    async () => {
      await repeatScenario('executor SIGKILL mid-call (async)', async () => {
        const token = `async-${randomUUID()}`;
        const queued = await execute({ tool_name: 'counted', args: { token, seconds: 3 }, mode: 'async' }, 30_000);
        expect(queued).toMatchObject({ status: 'queued' });
        await eventually(
          async () => runs.runs(token),
          (n) => n === 1,
          30_000,
        );
        await kill('executor');
        await restart('executor');
        const rec = await recordOf(
          client,
          org,
          (queued as { execution_id: string }).execution_id,
          (x) => FINAL.includes(x.execution.status),
          60_000,
        );
        expect(rec.execution).toMatchObject({ status: 'failed', error_code: 'EXECUTOR_LOST' });
        expect(runs.runs(token)).toBe(1);
        return {
          saw: `queued, then executions.get ${rec.execution.status}/${rec.execution.error_code}`,
          stored: `record ${rec.execution.status}/${rec.execution.error_code}; ${runs.runs(token)} run`,
        };
      });
    },
    perScenario(180_000),
  );

  it(
    'registry SIGKILLed between commit and publish: the tool.created event arrives exactly once',
    async () => {
      await repeatScenario('registry SIGKILL between commit and publish', async (i) => {
        const name = `between_${i}_${randomUUID().slice(0, 8)}`;
        const lockOrg = uniqueOrg('outbox');
        // Hold the org's outbox lock (the drain after the commit waits on it): the registry is then
        // exactly between its commit and its publish when it is killed.
        const lock = new Client({ connectionString: testDatabaseUrl() });
        await lock.connect();
        try {
          // The org's first write seeds its built-in tools (and drains their events): done before the lock is taken.
          await client.call(
            'toolplane.v1.tools.upsert',
            { org_id: lockOrg, tool: { source_code: pythonTool(`warm_${i}`, 'return 0') } },
            30_000,
          );
          await lock.query('SELECT pg_advisory_lock(hashtext($1))', [`registry.outbox.${prefix}.${lockOrg}`]);
          const pending = client
            .req(
              'toolplane.v1.tools.upsert',
              { org_id: lockOrg, tool: { source_code: pythonTool(name, 'return 1') } },
              { timeoutMs: 5000 },
            )
            .catch((e: Error) => e);
          const committed = await eventually(
            async () =>
              (
                await db.query(
                  'SELECT t.id, (SELECT count(*) FROM registry.event_outbox o WHERE o.org_id = t.org_id)::int AS staged FROM registry.tools t WHERE t.org_id = $1 AND t.name = $2',
                  [lockOrg, name],
                )
              ).rows,
            (rows) => rows.length === 1 && rows[0].staged === 1,
            30_000,
          );
          await kill('registry');
          await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [`registry.outbox.${prefix}.${lockOrg}`]);
          const r = await pending;
          expect(sawOf(r)).toMatch(TYPED_CLIENT_ERRORS);
          await restart('registry');
          // The new registry's relay publishes what the dead one left, then empties the outbox.
          await eventually(
            async () =>
              (await db.query('SELECT count(*)::int AS n FROM registry.event_outbox WHERE org_id = $1', [lockOrg]))
                .rows[0].n,
            (n) => n === 0,
            30_000,
          );
          const events = (await eventsOn(client.nc, prefix, 'tool.created')).filter(
            (e) => e.org_id === lockOrg && e.tool_name === name,
          );
          expect(events.map((e) => e.tool_id)).toEqual([committed[0].id]);
          // The tool is there for the caller who retries.
          const got = await client.call('toolplane.v1.tools.get', { org_id: lockOrg, name }, 30_000);
          expect(got.tool.id).toBe(committed[0].id);
          return {
            saw: `${sawOf(r)} (no reply: killed before it answered); retry get ok`,
            stored: `tool row committed; outbox drained by the relay; ${events.length} tool.created event`,
          };
        } finally {
          await lock.end();
        }
      });
    },
    perScenario(180_000),
  );
});
