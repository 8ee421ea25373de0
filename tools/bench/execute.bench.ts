/**
 * `npm run bench`: executions of a trivial tool through the public API (agent → executor → runner
 * → agent) against a bare `/usr/bin/python3 -c` spawn measured in the same run; then async mode:
 * BENCH_ASYNC_N (default 1000) trivial calls queued at once, and how fast they are taken and done.
 * Starts its own stack (fresh database, own subject prefix) on the local NATS and Postgres.
 * BENCH_N (default 300) calls per case.
 *
 * BENCH_BASELINE_ROOT: another checkout, built (`npm run build` there; e.g. `git archive HEAD`
 * unpacked with this node_modules linked in): a second stack runs from its dist/ and sync calls
 * are measured on both, alternating in rounds, so the two p50s come from the same minutes; the
 * CPU-per-call block alternates the baseline tree's warm call too (its apps as "baseline <app>").
 *
 * BENCH_USER=1 adds the cost of an end user on the call (`user_id`), on this tree's stack: sync
 * calls without a user, with a user who has no secrets, with a user who has 3, and with a new user
 * on every call (every env cache misses), interleaved one call of each per round (p50), and CPU per
 * call of the apps, nats-server and postgres read around alternating blocks of BENCH_USER_BLOCK
 * calls per case. BENCH_USER=only runs just that section. BENCH_USER_N (default 600) calls per case.
 *
 * CPU per call (issue 28), first: BENCH_CPU_N (default 1000) warm calls and as many bare python3
 * spawns (the baseline), in alternating blocks of 100: CPU ms per call of each app, nats-server,
 * postgres, the runner's sandbox processes (approximate) and the bench's reaped spawns, write
 * syscalls and wake-ups per call; then, in a block of its own, NATS messages and bytes per call
 * (BENCH_NATS_N, default 1000 calls). BENCH_CPU=only runs just that section. BENCH_CPU_PROF=<dir>:
 * every app writes a V8 CPU profile to <dir>/<app>/ when it stops, <dir>/window.json marks the
 * CPU block (read them with tools/bench/profile-breakdown.ts). The CPU block also alternates a sync
 * call with an idempotency key (recorded before it answers) and an async call waited for with
 * executions.get (BENCH_CPU_RECORDS=0 leaves them out): their extra CPU over a plain call.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { ALL_APPS, startStack, type Stack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import {
  countNats,
  cpuMs,
  cpuProfileEnv,
  HEADER,
  measure,
  measureUsageBlocks,
  natsLines,
  pidsOf,
  profiledWindow,
  row,
  stackGroups,
  summarize,
  usageLines,
  type Summary,
} from './stats';

const N = Number(process.env.BENCH_N ?? 300);
const ASYNC_N = Number(process.env.BENCH_ASYNC_N ?? 1000);
const BASELINE_ROOT = process.env.BENCH_BASELINE_ROOT;
/** Extra executor env for this tree's stack, as JSON (e.g. '{"EXECUTION_WRITE_BEHIND_MS":"200"}'). */
const EXECUTOR_ENV = JSON.parse(process.env.BENCH_EXECUTOR_ENV ?? '{}') as Record<string, string>;
const USER = process.env.BENCH_USER ?? '';
const USER_N = Number(process.env.BENCH_USER_N ?? 600);
const USER_BLOCK = Number(process.env.BENCH_USER_BLOCK ?? 50);
const CPU = process.env.BENCH_CPU ?? '';
const CPU_N = Number(process.env.BENCH_CPU_N ?? 1000);
const NATS_N = Number(process.env.BENCH_NATS_N ?? 1000);
/** BENCH_CPU_RECORDS=0 leaves the durable cases (idempotency key, async) out of the CPU block. */
const RECORDS = process.env.BENCH_CPU_RECORDS !== '0';
const TRIVIAL = `def ping(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;

function spawnPython(): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/usr/bin/python3', ['-I', '-c', 'import json; print(json.dumps(1))'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.stdout.resume();
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`python exited ${code}`))));
  });
}

interface Bench {
  stack: Stack;
  client: RawClient;
  db: string;
  prefix: string;
  call: (extra?: Record<string, unknown>) => Promise<void>;
}

async function benchStack(label: string, root?: string): Promise<Bench> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    root,
    env: { LOG_LEVEL: 'warn' },
    appEnv: root
      ? { 'runner-local': { RUNNER_MAX_CONCURRENCY: '16' } }
      : {
          ...Object.fromEntries(ALL_APPS.map((a) => [a, cpuProfileEnv(a)])),
          'runner-local': { RUNNER_MAX_CONCURRENCY: '16', ...cpuProfileEnv('runner-local') },
          executor: { ...EXECUTOR_ENV, ...cpuProfileEnv('executor') },
        },
  });
  const client = await RawClient.connect(prefix);
  const up = await client.req('toolplane.v1.tools.upsert', { org_id: 'bench', tool: { source_code: TRIVIAL } });
  if (up.error) throw new Error(`${label}: ${JSON.stringify(up.error)}`);
  let i = 0;
  const call = async (extra: Record<string, unknown> = {}) => {
    const r = await client.req('toolplane.v1.tools.execute', {
      org_id: 'bench',
      tool_name: 'ping',
      args: { x: ++i },
      ...extra,
    });
    if (r.status !== 'success') throw new Error(JSON.stringify(r));
  };
  for (let w = 0; w < 20; w++) await call(); // warm the tool cache and the JIT
  return { stack, client, db, prefix, call };
}

interface UserCase {
  label: string;
  fn: () => Promise<void>;
}

/**
 * The cost of user_id on the hot path (BENCH_USER): the org has 2 sandbox secrets, user
 * `u-secrets` has 3 of their own, `u-plain` none. Latency interleaved per call; CPU per call
 * (apps, nats-server, postgres) from alternating blocks, so drift hits every case alike.
 */
async function userCost(b: Bench): Promise<Array<{ label: string; s: Summary; cpuPerCallMs: number }>> {
  const set = async (body: Record<string, unknown>) => {
    const r = await b.client.req('toolplane.v1.secrets.set', { org_id: 'bench', ...body });
    if (r.error) throw new Error(JSON.stringify(r.error));
  };
  for (const k of ['ORG_A', 'ORG_B']) await set({ scope: 'sandbox', key: k, value: `org-${k}-value` });
  for (const k of ['USER_A', 'USER_B', 'ORG_A'])
    await set({ scope: 'user', user_id: 'u-secrets', key: k, value: `user-${k}-value` });
  let fresh = 0;
  const cases: UserCase[] = [
    { label: 'no user_id', fn: () => b.call() },
    { label: 'user_id, user without secrets', fn: () => b.call({ user_id: 'u-plain' }) },
    { label: 'user_id, user with 3 secrets', fn: () => b.call({ user_id: 'u-secrets' }) },
    { label: 'user_id, a new user every call', fn: () => b.call({ user_id: `u-new-${++fresh}` }) },
  ];
  // One call of each case per round, the first case rotating round by round: no case always
  // follows the heavy one (a new user: its env resolved and cached) or always leads a round.
  for (let w = 0; w < 20; w++) for (const c of cases) await c.fn();
  const samples = cases.map(() => [] as number[]);
  const t0 = performance.now();
  for (let i = 0; i < USER_N; i++) {
    for (let j = 0; j < cases.length; j++) {
      const k = (i + j) % cases.length;
      const t = performance.now();
      await cases[k]!.fn();
      samples[k]!.push(performance.now() - t);
    }
  }
  const wall = (performance.now() - t0) / cases.length;
  const latency = cases.map((c, k) => ({ label: c.label, s: summarize(samples[k]!, wall) }));
  const pids: Record<string, number[]> = {
    apps: [...b.stack.apps.values()].map((a) => a.proc.pid!).filter(Boolean),
    'nats-server': pidsOf('nats-server'),
    postgres: pidsOf('postgres'),
  };
  const total = (r: Record<string, number>) => Object.values(r).reduce((a, v) => a + v, 0);
  const cpu = cases.map(() => 0);
  for (let done = 0; done < USER_N; done += USER_BLOCK) {
    for (const [k, c] of cases.entries()) {
      const before = total(cpuMs(pids));
      for (let j = 0; j < Math.min(USER_BLOCK, USER_N - done); j++) await c.fn();
      cpu[k]! += total(cpuMs(pids)) - before;
    }
  }
  return latency.map((l, k) => ({ ...l, cpuPerCallMs: cpu[k]! / USER_N }));
}

/**
 * CPU per call of a warm trivial call beside a bare python3 spawn (the bench's own child), in
 * alternating blocks; then NATS messages and bytes per call in a block of their own.
 */
async function cpuPerCall(b: Bench, base?: Bench): Promise<void> {
  const g = stackGroups(b.stack.apps, { bench: [process.pid] });
  g.reaped = { 'bench-spawned python3 (reaped)': process.pid };
  if (base) {
    // The baseline tree's apps and sandboxes as groups of their own ("baseline …"); nats-server and postgres are shared.
    const bg = stackGroups(base.stack.apps);
    for (const [k, v] of Object.entries(bg.pids))
      if (k !== 'nats-server' && k !== 'postgres') g.pids[`baseline ${k}`] = v;
    g.trees = {
      ...g.trees,
      ...Object.fromEntries(Object.entries(bg.trees ?? {}).map(([k, v]) => [`baseline ${k}`, v])),
    };
  }
  for (let w = 0; w < 100; w++) await b.call();
  for (let w = 0; w < 100 && base; w++) await base.call();
  let key = 0;
  const pending: string[] = [];
  const tag = randomBytes(4).toString('hex');
  const cases = [
    { label: 'bare /usr/bin/python3 -c spawn (baseline)', fn: spawnPython },
    { label: 'tools.execute warm, concurrency 1', fn: () => b.call() },
    ...(base ? [{ label: 'tools.execute warm, concurrency 1, BENCH_BASELINE_ROOT', fn: () => base.call() }] : []),
    // Durable before it runs and answers: the record opened (key claimed) in one transaction, the outcome written in another, its event published.
    ...(RECORDS
      ? [
          {
            label: 'tools.execute with an idempotency_key (recorded before it answers)',
            fn: () => b.call({ idempotency_key: `bench-${tag}-${++key}` }),
          },
        ]
      : []),
    // Queued, taken from the work queue, run, recorded, its event published: submitted one after another, the block ends when all are done.
    ...(RECORDS
      ? [
          {
            label: 'tools.execute async (queued, run from the work queue, recorded)',
            fn: () => submitAsync(b, pending),
            settle: () => untilDone(b, pending),
          },
        ]
      : []),
  ];
  const res = await profiledWindow('tools.execute warm (alternating with bare spawns)', CPU_N, () =>
    measureUsageBlocks(cases, g, CPU_N),
  );
  process.stdout.write(
    `\nCPU per call (${new Date().toISOString()}, ${CPU_N} calls per case in alternating blocks of 100; nats-server and postgres count every client on the machine)\n`,
  );
  for (const r of res)
    process.stdout.write(
      `${usageLines(r.label, r.use, r.calls).join('\n')}\n  wall ${(r.wallMs / r.calls).toFixed(2)} ms per call\n`,
    );
  // Each tree's own processes in its own block, beside the shared nats-server and postgres of that block.
  const own = (r: (typeof res)[number], baseline: boolean) =>
    Object.entries(r.use.cpu)
      .filter(
        ([k]) =>
          k.startsWith('baseline ') === baseline &&
          !['nats-server', 'postgres', 'bench', 'whole machine'].includes(k) &&
          !k.includes('reaped'),
      )
      .reduce((a, [, v]) => a + v, 0) / r.calls;
  const shared = (r: (typeof res)[number]) => ((r.use.cpu['nats-server'] ?? 0) + (r.use.cpu.postgres ?? 0)) / r.calls;
  const total = (r: (typeof res)[number], baseline = false) => own(r, baseline) + shared(r);
  const plain = res[1]!;
  if (base) {
    const theirs = res[2]!;
    process.stdout.write(
      `this tree vs BENCH_BASELINE_ROOT, CPU ms per warm call (apps + sandboxes + nats-server + postgres): ${total(plain).toFixed(2)} vs ${total(theirs, true).toFixed(2)} = ${(total(plain) / total(theirs, true)).toFixed(2)}x (apps + sandboxes ${own(plain, false).toFixed(2)} vs ${own(theirs, true).toFixed(2)}, nats-server + postgres ${shared(plain).toFixed(2)} vs ${shared(theirs).toFixed(2)})\n`,
    );
  }
  for (const r of res.slice(base ? 3 : 2)) {
    process.stdout.write(
      `${r.label}: ${total(r).toFixed(2)} ms CPU per call (apps + sandboxes + nats-server + postgres), ${(total(r) - total(plain)).toFixed(2)} more than a plain call (${total(plain).toFixed(2)})\n`,
    );
  }
  const counter = await countNats(b.client.nc, b.prefix);
  for (let i = 0; i < NATS_N; i++) await b.call();
  process.stdout.write(`${natsLines('tools.execute warm', await counter.stop(), NATS_N).join('\n')}\n`);
}

/** Queues one async call (its id kept in `pending`). */
async function submitAsync(b: Bench, pending: string[]): Promise<void> {
  const r = await b.client.req('toolplane.v1.tools.execute', {
    org_id: 'bench',
    tool_name: 'ping',
    args: { x: 1 },
    mode: 'async',
  });
  if (r.status !== 'queued') throw new Error(JSON.stringify(r));
  pending.push(r.execution_id);
}

/** Waits until every queued call is done, reading the record of the oldest still pending every 20 ms (the reads count in the block's CPU). */
async function untilDone(b: Bench, pending: string[]): Promise<void> {
  while (pending.length) {
    const g = await b.client.req('toolplane.v1.executions.get', { org_id: 'bench', execution_id: pending[0] });
    if (g.error) throw new Error(JSON.stringify(g.error));
    const s = g.execution.status;
    if (s === 'succeeded') pending.shift();
    else if (s === 'queued' || s === 'running') await new Promise((res) => setTimeout(res, 20));
    else throw new Error(JSON.stringify(g.execution));
  }
}

async function closeBench(b: Bench | undefined): Promise<void> {
  if (!b) return;
  await b.client.close();
  await b.stack.stop();
  await deleteStreams(b.prefix);
  await dropDatabase(b.db);
}

/** Sync calls at concurrency 1 on both stacks, alternating rounds of 25, N calls each. */
async function interleaved(current: Bench, baseline: Bench): Promise<[Summary, Summary]> {
  const samples: [number[], number[]] = [[], []];
  const walls = [0, 0];
  for (let done = 0; done < N; done += 25) {
    for (const [k, b] of [current, baseline].entries()) {
      const t0 = performance.now();
      for (let j = 0; j < Math.min(25, N - done); j++) {
        const t = performance.now();
        await b.call();
        samples[k]!.push(performance.now() - t);
      }
      walls[k]! += performance.now() - t0;
    }
  }
  return [summarize(samples[0], walls[0]!), summarize(samples[1], walls[1]!)];
}

/** ASYNC_N trivial calls queued as fast as one client can (concurrency 32), then run from the work queue until all are done. */
async function asyncThroughput(b: Bench): Promise<{ accept: Summary; doneMs: number; failed: number }> {
  let i = 0;
  const t0 = performance.now();
  const accept = await measure(ASYNC_N, 32, async () => {
    const r = await b.client.req('toolplane.v1.tools.execute', {
      org_id: 'bench-async',
      tool_name: 'ping',
      args: { x: ++i },
      mode: 'async',
    });
    if (r.status !== 'queued') throw new Error(JSON.stringify(r));
  });
  const pg = new Client({ connectionString: databaseUrlFor(b.db) });
  await pg.connect();
  try {
    for (;;) {
      const r = await pg.query(
        `SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed'))::int AS done, count(*) FILTER (WHERE status = 'failed')::int AS failed FROM executor.executions WHERE org_id = 'bench-async'`,
      );
      if (r.rows[0].done >= ASYNC_N) return { accept, doneMs: performance.now() - t0, failed: r.rows[0].failed };
      await new Promise((res) => setTimeout(res, 50));
    }
  } finally {
    await pg.end();
  }
}

async function main(): Promise<void> {
  let current: Bench | undefined;
  let baseline: Bench | undefined;
  try {
    current = await benchStack('current');
    const c = current;
    const up = await c.client.req('toolplane.v1.tools.upsert', {
      org_id: 'bench-async',
      tool: { source_code: TRIVIAL },
    });
    if (up.error) throw new Error(JSON.stringify(up.error));
    if (BASELINE_ROOT) baseline = await benchStack('baseline', BASELINE_ROOT);
    await measure(20, 1, spawnPython);
    await cpuPerCall(c, baseline);
    if (CPU === 'only') return;
    if (USER) {
      const user = await userCost(c);
      process.stdout.write(
        `\nuser_id on the hot path (${new Date().toISOString()}, ${USER_N} calls per case, interleaved; CPU: apps + nats-server + postgres)\n`,
      );
      process.stdout.write(`${HEADER} ${'CPU ms/call'.padStart(12)}\n`);
      for (const u of user) process.stdout.write(`${row(u.label, u.s)} ${u.cpuPerCallMs.toFixed(3).padStart(12)}\n`);
      const [none, ...rest] = user;
      for (const u of rest) {
        process.stdout.write(
          `${u.label}: p50 ${u.s.p50 - none!.s.p50 >= 0 ? '+' : ''}${(u.s.p50 - none!.s.p50).toFixed(3)} ms, CPU ${u.cpuPerCallMs - none!.cpuPerCallMs >= 0 ? '+' : ''}${(u.cpuPerCallMs - none!.cpuPerCallMs).toFixed(3)} ms per call vs no user_id\n`,
        );
      }
      if (USER === 'only') return;
    }

    const results: Array<readonly [string, Summary]> = [
      ['bare /usr/bin/python3 -c spawn (baseline)', await measure(N, 1, spawnPython)],
    ];
    let compared: [Summary, Summary] | undefined;
    if (baseline) {
      compared = await interleaved(c, baseline);
      results.push(
        ['tools.execute, concurrency 1 (this tree)', compared[0]],
        ['tools.execute, concurrency 1 (BENCH_BASELINE_ROOT)', compared[1]],
      );
    } else {
      results.push(['tools.execute via NATS, concurrency 1', await measure(N, 1, c.call)]);
    }
    results.push(
      ['tools.execute via NATS, concurrency 8', await measure(N, 8, c.call)],
      ['tools.execute via NATS, concurrency 16', await measure(N, 16, c.call)],
      [
        'tools.get via NATS (registry, no sandbox)',
        await measure(
          N,
          1,
          async () => void (await c.client.req('toolplane.v1.tools.get', { org_id: 'bench', name: 'ping' })),
        ),
      ],
    );
    const async = await asyncThroughput(c);
    results.push([`async accept (${ASYNC_N} queued, concurrency 32)`, async.accept]);
    process.stdout.write(
      `\nToolplane execute benchmark (${new Date().toISOString()}, ${N} calls per case)\n${HEADER}\n`,
    );
    for (const [label, s] of results) process.stdout.write(`${row(label, s)}\n`);
    const base = results[0]![1].p50;
    const c1 = results[1]![1].p50;
    process.stdout.write(
      `\nexecute p50 / bare spawn p50 = ${(c1 / base).toFixed(2)}x (overhead ${(c1 - base).toFixed(2)} ms per call)\n`,
    );
    if (compared)
      process.stdout.write(
        `execute p50, this tree - baseline = ${(compared[0].p50 - compared[1].p50).toFixed(2)} ms (${compared[0].p50.toFixed(2)} vs ${compared[1].p50.toFixed(2)})\n`,
      );
    process.stdout.write(
      `async: ${ASYNC_N} calls queued in ${((async.accept.n / async.accept.perSecond) * 1000).toFixed(0)} ms (${async.accept.perSecond.toFixed(0)} accepted/s), all done in ${async.doneMs.toFixed(0)} ms (${((ASYNC_N / async.doneMs) * 1000).toFixed(1)} done/s), ${async.failed} failed\n`,
    );
  } finally {
    await closeBench(current);
    await closeBench(baseline);
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
