/**
 * `npm run reliability:load`: sustained load through the public API (an org token, as an agent
 * runtime sends it) on a stack this script starts (fresh database, own subject prefix, local NATS
 * and Postgres). After a warm-up, each round runs
 *   - LOAD_CALLS executions of a trivial tool at concurrency LOAD_CONCURRENCY, then
 *   - LOAD_CALLS operations of the mixed profile: 20 % registry reads (tools.get), 5 % upserts,
 *     5 % MCP tool calls (an in-process Streamable HTTP MCP server), 70 % executions;
 * and LOAD_ROUNDS identical rounds (default 2) are compared for the leak check.
 *
 * Correctness: every execution sends a nonce of its own which the tool (Python or MCP) echoes, and
 * every upsert one its reply must carry back: each must come back exactly once, to its own caller
 * (0 lost, 0 duplicated); the executor's records of the org are counted too.
 * Memory: RSS (/proc/<pid>/status) of every service process at the start, after the warm-up and
 * after each round; a service whose RSS after the last round is more than LOAD_RSS_BOUND_MB
 * (default 64) above its RSS after the first round fails the run (exit 1).
 *
 *   LOAD_CALLS=1000 npm run reliability:load           a quick run
 *   LOAD_DURATION_S=1800 npm run reliability:load      soak: the rounds share this many seconds
 *   LOAD_REPLICAS=2 npm run reliability:load           then executions with 1 executor + 1
 *                                                      runner-local vs 2 + 2 (same queue groups)
 *   LOAD_FUZZ=1 npm run reliability:load               the fuzz generators run alongside the load
 *
 * Other knobs: LOAD_CONCURRENCY (64), LOAD_ROUNDS (2), LOAD_WARMUP (min(1000, LOAD_CALLS / 5)),
 * LOAD_CALL_TIMEOUT_MS (60000), LOAD_RUNNER_CONCURRENCY (the runner's RUNNER_MAX_CONCURRENCY,
 * default its own), LOAD_FUZZ_SEED.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { Client } from 'pg';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { echoTool, FakeMcpServer } from '../../test/support/mcp-servers';
import { RawClient } from '../../test/support/nats-client';
import { startStack, type RunningApp, type Stack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import {
  latencySummary,
  leakRows,
  mixedOp,
  NO_REPLY,
  NO_RESPONDERS,
  NonceLedger,
  ppidOf,
  rssMiBOf,
  Tally,
  type LeakRow,
} from './load-accounting';
import { startFuzzSoak, type FuzzReport, type FuzzSoak } from './load-fuzz';

const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const CALLS = num('LOAD_CALLS', 10_000);
const CONCURRENCY = Math.max(1, num('LOAD_CONCURRENCY', 64));
const ROUNDS = Math.max(1, num('LOAD_ROUNDS', 2));
const DURATION_S = num('LOAD_DURATION_S', 0);
const WARMUP = num('LOAD_WARMUP', Math.min(1000, Math.ceil(CALLS / 5)));
const RSS_BOUND_MB = num('LOAD_RSS_BOUND_MB', 64);
const REPLICAS = num('LOAD_REPLICAS', 1);
const CALL_TIMEOUT_MS = num('LOAD_CALL_TIMEOUT_MS', 60_000);
const FUZZ = process.env.LOAD_FUZZ === '1';
const FUZZ_SEED = num('LOAD_FUZZ_SEED', Date.now() % 1_000_000_000);
const RUNNER_CONCURRENCY = process.env.LOAD_RUNNER_CONCURRENCY;

const ECHO = `def echo(nonce: str) -> str:
    """Return the nonce it was given.

    Args:
        nonce (str): A unique token of this call.
    """
    return nonce
`;
const MCP_TOOL = 'load_echo';
const NOTES = 8;

type Kind = 'execute' | 'mcp' | 'read' | 'upsert';
const KINDS: Kind[] = ['execute', 'read', 'upsert', 'mcp'];
const say = (line = ''): void => void process.stdout.write(`${line}\n`);
const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : 'gone');

interface PhaseResult {
  label: string;
  wallMs: number;
  samples: Map<Kind, number[]>;
  errors: Tally;
}

class LoadDriver {
  readonly ledgers: Record<Exclude<Kind, 'read'>, NonceLedger> = {
    execute: new NonceLedger(),
    mcp: new NonceLedger(),
    upsert: new NonceLedger(),
  };
  /** Executions answered with a result (success or a tool error): each must have a record. */
  readonly withResult: Record<'execute' | 'mcp', number> = { execute: 0, mcp: 0 };
  private seq = 0;
  private upserts = 0;
  private readonly run = randomBytes(3).toString('hex');

  constructor(
    private readonly client: RawClient,
    readonly org: string,
  ) {}

  private nonce(): string {
    return `n${this.run}-${++this.seq}`;
  }

  /** One operation; resolves to an error label (a typed code, or why there was no reply) or undefined. */
  async op(kind: Kind): Promise<string | undefined> {
    try {
      if (kind === 'read') return await this.read();
      if (kind === 'upsert') return await this.upsert();
      return await this.execute(kind);
    } catch (e) {
      const m = `${(e as Error).name} ${(e as Error).message}`;
      return /timeout/i.test(m) ? NO_REPLY : /no responders/i.test(m) ? NO_RESPONDERS : `CLIENT ${m.slice(0, 80)}`;
    }
  }

  private async execute(kind: 'execute' | 'mcp'): Promise<string | undefined> {
    const nonce = this.nonce();
    const ledger = this.ledgers[kind];
    ledger.send(nonce);
    const args = kind === 'execute' ? { nonce } : { text: nonce };
    const r = await this.client.req(
      'toolplane.v1.tools.execute',
      { org_id: this.org, tool_name: kind === 'execute' ? 'echo' : MCP_TOOL, args },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    if (r.error) {
      ledger.fail(nonce);
      return String(r.error.code);
    }
    this.withResult[kind]++;
    if (r.status !== 'success') {
      ledger.fail(nonce);
      return String(r.error?.code ?? 'STATUS_ERROR_WITHOUT_CODE');
    }
    ledger.echo(nonce, r.func_return);
    return r.func_return === nonce ? undefined : 'WRONG_ECHO';
  }

  private async read(): Promise<string | undefined> {
    const r = await this.client.req(
      'toolplane.v1.tools.get',
      { org_id: this.org, name: 'echo' },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    if (r.error) return String(r.error.code);
    return r.tool?.name === 'echo' ? undefined : 'WRONG_TOOL';
  }

  /** Upserts one of NOTES tools, its nonce in the docstring: the reply's description must carry it. */
  private async upsert(): Promise<string | undefined> {
    const nonce = this.nonce();
    const k = this.upserts++ % NOTES;
    this.ledgers.upsert.send(nonce);
    const source = `def note_${k}() -> str:\n    """Note ${nonce}."""\n    return "${k}"\n`;
    const r = await this.client.req(
      'toolplane.v1.tools.upsert',
      { org_id: this.org, tool: { source_code: source, tags: ['load'] } },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    if (r.error) {
      this.ledgers.upsert.fail(nonce);
      return String(r.error.code);
    }
    const got = /Note ([\w-]+)\./.exec(String(r.tool?.description))?.[1];
    this.ledgers.upsert.echo(nonce, got);
    return got === nonce ? undefined : 'WRONG_ECHO';
  }
}

/** Runs `count` operations (or until `untilMs`, whichever first) on CONCURRENCY workers. */
async function phase(
  label: string,
  driver: LoadDriver,
  pick: (i: number) => Kind,
  count: number,
  untilMs?: number,
): Promise<PhaseResult> {
  const samples = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
  const errors = new Tally();
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count && (untilMs === undefined || Date.now() < untilMs)) {
        const kind = pick(next++);
        const t = performance.now();
        const error = await driver.op(kind);
        samples.get(kind)!.push(performance.now() - t);
        if (error) errors.add(`${kind}: ${error}`);
      }
    }),
  );
  return { label, wallMs: performance.now() - t0, samples, errors };
}

/** Every service process of the stack, replicas as `<app>#2`, … */
function services(stack: Stack): Array<{ label: string; app: RunningApp }> {
  const out: Array<{ label: string; app: RunningApp }> = [...stack.apps.values()].map((app) => ({
    label: app.name,
    app,
  }));
  const seen = new Map<string, number>();
  for (const app of stack.replicas) {
    const n = (seen.get(app.name) ?? 1) + 1;
    seen.set(app.name, n);
    out.push({ label: `${app.name}#${n}`, app });
  }
  return out;
}

function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

/** RSS (MiB) of each service process, and of it with its descendants (sandboxes, zygotes) and how many they are. */
function memory(stack: Stack): Map<string, { rss: number; tree: number; procs: number }> {
  const children = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const ppid = ppidOf(readProc(Number(d), 'stat'));
    if (Number.isFinite(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
  }
  const out = new Map<string, { rss: number; tree: number; procs: number }>();
  for (const { label, app } of services(stack)) {
    const pid = app.proc.pid!;
    const alive = app.proc.exitCode === null && app.proc.signalCode === null;
    const rss = alive ? rssMiBOf(readProc(pid, 'status')) : Number.NaN;
    let tree = 0;
    let procs = 0;
    const todo = [...(children.get(pid) ?? [])];
    while (todo.length) {
      const p = todo.pop()!;
      procs++;
      tree += rssMiBOf(readProc(p, 'status')) || 0;
      todo.push(...(children.get(p) ?? []));
    }
    out.set(label, { rss, tree: rss + tree, procs });
  }
  return out;
}

/**
 * RSS once the load has stopped: the least of six readings over 3 s per service (write-behind
 * batches, the outbox relay and a garbage collection settle; a single reading mid-GC is noise).
 */
async function settledMemory(stack: Stack): Promise<Map<string, { rss: number; tree: number; procs: number }>> {
  const best = memory(stack);
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 600));
    const m = memory(stack);
    for (const [k, v] of m) if (!(best.get(k)!.rss <= v.rss)) best.set(k, v);
  }
  return best;
}

/** Records of the org's executions per tool, once they stop changing (write-behind inserts them shortly after the reply). */
async function storedRecords(db: string, org: string, expected: number): Promise<Map<string, number>> {
  const pg = new Client({ connectionString: databaseUrlFor(db) });
  await pg.connect();
  try {
    const deadline = Date.now() + 60_000;
    let last = -1;
    for (;;) {
      const r = await pg.query<{ tool_name: string; n: number }>(
        `SELECT tool_name, count(*)::int AS n FROM executor.executions WHERE org_id = $1 GROUP BY tool_name`,
        [org],
      );
      const by = new Map(r.rows.map((x) => [x.tool_name, x.n]));
      const total = [...by.values()].reduce((a, b) => a + b, 0);
      if ((total >= expected && total === last) || Date.now() > deadline) return by;
      last = total;
      await new Promise((res) => setTimeout(res, 1000));
    }
  } finally {
    await pg.end();
  }
}

/** Error-level lines of a service's JSON log (a typed INTERNAL is logged with its cause by the service that made it). */
function errorLines(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => /"level":\s*("error"|50)|\bERROR\b/.test(l))
    .map((l) => l.slice(0, 600));
}

function printPhases(results: readonly PhaseResult[]): void {
  say('| phase | kind | n | p50 ms | p99 ms | max ms | ops/s (phase) | errors by code |');
  say('|---|---|---:|---:|---:|---:|---:|---|');
  for (const r of results) {
    const total = [...r.samples.values()].reduce((a, s) => a + s.length, 0);
    for (const kind of KINDS) {
      const s = r.samples.get(kind)!;
      if (!s.length) continue;
      const x = latencySummary(s, r.wallMs);
      const errs =
        r.errors
          .entries()
          .filter(([k]) => k.startsWith(`${kind}: `))
          .map(([k, n]) => `${k.slice(kind.length + 2)} ${n}`)
          .join(', ') || '0';
      say(
        `| ${r.label} | ${kind} | ${x.n} | ${x.p50.toFixed(1)} | ${x.p99.toFixed(1)} | ${x.max.toFixed(1)} | ${x.perSecond.toFixed(1)} | ${errs} |`,
      );
    }
    say(
      `| ${r.label} | **all** | ${total} | | | | **${((total / r.wallMs) * 1000).toFixed(1)}** | ${r.errors.total} |`,
    );
  }
}

async function main(): Promise<number> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_load_${id}`;
  const prefix = `load${id}`;
  const org = `load-${id}`;
  const failures: string[] = [];
  say(
    `Toolplane load (${new Date().toISOString()}): ${DURATION_S ? `soak of ${DURATION_S} s in all: ${(DURATION_S / (2 * ROUNDS)).toFixed(1)} s` : `${CALLS} calls`} per phase × 2 phases × ${ROUNDS} rounds at concurrency ${CONCURRENCY}, warm-up ${WARMUP}${REPLICAS > 1 ? `, then 1 vs ${REPLICAS} replicas` : ''}${FUZZ ? `, fuzz soak alongside (seed ${FUZZ_SEED})` : ''}`,
  );
  say(
    `machine: ${availableParallelism()} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start (shared with whatever else runs here)`,
  );
  await createDatabase(db);
  let stack: Stack | undefined;
  let client: RawClient | undefined;
  let fuzz: FuzzSoak | undefined;
  const mcp = new FakeMcpServer();
  mcp.tools = [echoTool(MCP_TOOL)];
  try {
    // A busy box (this one is shared) can take well over 30 s to start seven services side by side.
    stack = await startStack({
      prefix,
      databaseUrl: databaseUrlFor(db),
      readyTimeoutMs: 180_000,
      env: { LOG_LEVEL: 'warn' },
      appEnv: RUNNER_CONCURRENCY ? { 'runner-local': { RUNNER_MAX_CONCURRENCY: RUNNER_CONCURRENCY } } : {},
    });
    await mcp.start();
    client = await RawClient.connect(prefix);
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ECHO } });
    if (up.error) throw new Error(`upsert echo: ${JSON.stringify(up.error)}`);
    const added = await client.req(
      'toolplane.v1.mcp.servers.add',
      { org_id: org, server: { name: 'load', transport: 'streamable_http', url: mcp.url } },
      { timeoutMs: 60_000 },
    );
    if (added.error) throw new Error(`add MCP server: ${JSON.stringify(added.error)}`);
    const driver = new LoadDriver(client, org);
    const rss: Array<Map<string, { rss: number; tree: number; procs: number }>> = [await settledMemory(stack)];
    if (FUZZ) fuzz = await startFuzzSoak(prefix, `${org}-fuzz`, FUZZ_SEED);
    say(
      `  stack up (${services(stack).length} services), echo tool and MCP server registered${FUZZ ? ', fuzz soak started' : ''}`,
    );

    const results: PhaseResult[] = [];
    results.push(await phase('warm-up (mixed)', driver, mixedOp, WARMUP));
    say('  warm-up done');
    rss.push(await settledMemory(stack));
    const phaseMs = DURATION_S ? (DURATION_S * 1000) / (ROUNDS * 2) : undefined;
    const limit = DURATION_S ? Number.MAX_SAFE_INTEGER : CALLS;
    for (let round = 1; round <= ROUNDS; round++) {
      results.push(
        await phase(`round ${round}: executions`, driver, () => 'execute', limit, phaseMs && Date.now() + phaseMs),
      );
      results.push(await phase(`round ${round}: mixed`, driver, mixedOp, limit, phaseMs && Date.now() + phaseMs));
      rss.push(await settledMemory(stack));
      say(`  round ${round} done (load average ${loadavg()[0]!.toFixed(2)})`);
    }
    const fuzzReport: FuzzReport | undefined = await fuzz?.stop();
    fuzz = undefined;
    const replicaPhases = REPLICAS > 1 ? await replicaRun(stack, driver) : undefined;

    say('\n## Latency and throughput');
    printPhases(results);

    say('\n## Correctness (every nonce back exactly once, to its own caller)');
    say('| kind | sent | echoed | typed errors | lost | duplicated | foreign |');
    say('|---|---:|---:|---:|---:|---:|---:|');
    for (const [kind, ledger] of Object.entries(driver.ledgers)) {
      const r = ledger.report();
      say(`| ${kind} | ${r.sent} | ${r.echoed} | ${r.failed} | ${r.lost} | ${r.duplicated} | ${r.foreign} |`);
      if (r.lost || r.duplicated || r.foreign)
        failures.push(`${kind}: ${r.lost} lost, ${r.duplicated} duplicated, ${r.foreign} foreign`);
    }
    const expected = driver.withResult.execute + driver.withResult.mcp;
    const stored = await storedRecords(db, org, expected);
    say('\n| execution records (executor.executions) | sent | answered with a result | stored |');
    say('|---|---:|---:|---:|');
    for (const [kind, tool] of [
      ['execute', 'echo'],
      ['mcp', MCP_TOOL],
    ] as const) {
      const sent = driver.ledgers[kind].report().sent;
      const n = stored.get(tool) ?? 0;
      say(`| ${tool} | ${sent} | ${driver.withResult[kind]} | ${n} |`);
      if (n < driver.withResult[kind] || n > sent)
        failures.push(`records of ${tool}: ${n} stored, ${driver.withResult[kind]} answered, ${sent} sent`);
    }

    say(
      `\n## Memory (RSS MiB, least of 6 readings over 3 s after each stage; leak bound: growth from the end of round 1 to the end of round ${ROUNDS} ≤ ${RSS_BOUND_MB} MiB per service)`,
    );
    const labels = [...rss[0]!.keys()];
    const rows: LeakRow[] = leakRows(
      labels.map((l) => ({ service: l, rss: rss.map((m) => m.get(l)?.rss ?? Number.NaN) })),
      RSS_BOUND_MB,
    );
    say(
      '| service | start | after warm-up | after round 1 | after last round | growth last − round 1 | with children start → end (procs) | verdict |',
    );
    say('|---|---:|---:|---:|---:|---:|---|---|');
    for (const r of rows) {
      const a = rss[0]!.get(r.service)!;
      const b = rss.at(-1)!.get(r.service)!;
      say(
        `| ${r.service} | ${f1(r.start)} | ${f1(r.warm)} | ${f1(r.first)} | ${f1(r.last)} | ${f1(r.growth)} | ${f1(a.tree)} (${a.procs}) → ${f1(b.tree)} (${b.procs}) | ${r.pass ? 'pass' : 'FAIL'} |`,
      );
      if (!r.pass)
        failures.push(
          `${r.service}: RSS grew ${f1(r.growth)} MiB in the rounds after the first (bound ${RSS_BOUND_MB})`,
        );
    }
    if (ROUNDS < 2) say('(one round: the growth shown is from the warm-up; set LOAD_ROUNDS ≥ 2 for the leak check)');

    if (fuzzReport) {
      say(
        `\n## Fuzz soak alongside (seed ${fuzzReport.seed}): ${fuzzReport.cases} cases in ${fuzzReport.rounds} full rounds over every public subject`,
      );
      say(`answers: ${fuzzReport.codes}`);
      say(
        fuzzReport.findings.length
          ? `findings (${fuzzReport.findings.length}):`
          : 'findings: none (every case got a contract-valid reply or a typed error other than INTERNAL)',
      );
      for (const f of fuzzReport.findings.slice(0, 20)) say(`  ${f.subject}: ${f.problem}: ${f.request}`);
      if (fuzzReport.findings.length) {
        failures.push(`fuzz: ${fuzzReport.findings.length} findings`);
        say('what the services logged as errors (last 5 lines each):');
        for (const { label, app } of services(stack))
          for (const line of errorLines(app.output()).slice(-5)) say(`  ${label}: ${line}`);
      }
    }

    if (replicaPhases) printReplicas(stack, replicaPhases);

    for (const { label, app } of services(stack))
      if (app.proc.exitCode !== null || app.proc.signalCode !== null)
        failures.push(`${label} exited (${app.proc.exitCode ?? app.proc.signalCode})`);
    say(
      `\nload average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at the end`,
    );
  } finally {
    await fuzz?.stop().catch(() => undefined);
    await client?.close();
    await stack?.stop();
    if (mcp.port) await mcp.stop(); // (stop() of a server that never listened would never resolve)
    await deleteStreams(prefix);
    await dropDatabase(db);
    if (process.env.TOOLPLANE_TEST_KEYS_DIR)
      rmSync(process.env.TOOLPLANE_TEST_KEYS_DIR, { recursive: true, force: true });
  }
  say(
    failures.length
      ? `\nFAIL:\n${failures.map((f) => `  - ${f}`).join('\n')}`
      : '\nPASS: 0 lost, 0 duplicated, records match, RSS within the bound, every service alive',
  );
  return failures.length ? 1 : 0;
}

/**
 * Executions with one executor and one runner-local, then with REPLICAS of each on the same queue
 * groups, same count, back to back in the same run (the nonces and records of both are in the
 * correctness tables).
 */
async function replicaRun(stack: Stack, driver: LoadDriver): Promise<ReplicaRun> {
  const n = DURATION_S ? Math.max(1000, CALLS) : CALLS;
  const one = await phase('replicas: 1 executor + 1 runner-local', driver, () => 'execute', n);
  for (let i = 1; i < REPLICAS; i++)
    await Promise.all([stack.addReplica('executor'), stack.addReplica('runner-local')]);
  await phase('replicas: warm-up', driver, () => 'execute', Math.min(500, n));
  const runners = services(stack).filter((s) => s.app.name === 'runner-local');
  const before = await Promise.all(runners.map((r) => runsServed(r.app)));
  const many = await phase(`replicas: ${REPLICAS} executors + ${REPLICAS} runner-local`, driver, () => 'execute', n);
  const after = await Promise.all(runners.map((r) => runsServed(r.app)));
  return { one, many, served: runners.map((r, i) => `${r.label} ${after[i]! - before[i]!}`).join(', ') };
}

interface ReplicaRun {
  one: PhaseResult;
  many: PhaseResult;
  /** Runs each runner-local served in the replicated phase (its toolplane_runner_runs_total). */
  served: string;
}

/** Every run a runner-local answered so far (the sum of its toolplane_runner_runs_total series); NaN when unreadable. */
async function runsServed(app: RunningApp): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${app.healthPort}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('toolplane_runner_runs_total'))
      .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  } catch {
    return Number.NaN;
  }
}

function printReplicas(stack: Stack, { one, many, served }: ReplicaRun): void {
  say(`\n## Replicas (same queue groups; ${availableParallelism()} cores shared by every process and the driver)`);
  printPhases([one, many]);
  const a = latencySummary(one.samples.get('execute')!, one.wallMs);
  const b = latencySummary(many.samples.get('execute')!, many.wallMs);
  const procs = services(stack).filter((s) => s.app.name === 'runner-local' || s.app.name === 'executor');
  say(
    `throughput ${REPLICAS}× / 1×: ${(b.perSecond / a.perSecond).toFixed(2)} (${b.perSecond.toFixed(1)} vs ${a.perSecond.toFixed(1)} calls/s); processes: ${procs.map((r) => `${r.label} pid ${r.app.proc.pid}`).join(', ')}`,
  );
  say(`runs each runner-local served in the replicated phase: ${served}`);
}

// A run whose event loop empties while main still awaits would end silently with 0: say so, and fail.
process.once('beforeExit', () => {
  process.stderr.write(
    `load: the event loop emptied before the run ended (active: ${process.getActiveResourcesInfo().join(', ') || 'none'})\n`,
  );
  process.exit(2);
});

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
