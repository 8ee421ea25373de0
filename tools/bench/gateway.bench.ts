/**
 * `npm run bench:gateway`: what the MCP gateway costs over the same call on NATS, in one run on
 * one stack (own database and subject prefix, the local NATS and Postgres, loopback only):
 *  1. latency: tools/call of a trivial warm Python tool attached to an agent, through the gateway
 *     (the MCP SDK's Client + StreamableHTTPClientTransport, one initialized session, sequential)
 *     against toolplane.v1.tools.execute of the same tool, agent and arguments over NATS (a plain
 *     NATS client with an org token), interleaved one call each per round after a warm-up;
 *  2. CPU (utime + stime) and write syscalls per call of every process — each app, the runner's
 *     sandboxes, nats-server, postgres, the bench itself — in alternating blocks of each path; then
 *     NATS messages and bytes per call of each path by subject family, each in a block of its own;
 *  3. calls/s at concurrency 16: 16 sessions, one call in flight on each, against 16 concurrent
 *     requests on one NATS connection (as an agent runtime multiplexes), with CPU per call again;
 *  4. BENCH_SESSIONS (1,000) sessions held at once — SDK clients, initialized, each with its GET
 *     stream open — the gateway's RSS and its V8 heap after a forced GC (through the inspector,
 *     on a loopback port) before, held and after, per session, the sessions KV bucket's entries,
 *     then every session DELETEd. The heap after GC is also read before the first call and after
 *     the last of phases 1-3: what the calls left behind.
 * BENCH_N (1000) calls per path and phase after BENCH_WARMUP (200) rounds; BENCH_CPU_PROF=<dir>
 * writes V8 CPU profiles of the gateway and the executor there when they stop; BENCH_DEADLINE_MS
 * (20 min) ends the run whatever happens. No JSON output: no other bench writes one.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { MCP_SESSIONS_BUCKET } from '@toolplane/contracts';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { freePort, startStack, type AppName, type Stack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import {
  countNats,
  cpuMs,
  descendantsCpuMs,
  measure,
  measureInterleaved,
  natsLines,
  pidsOf,
  rssKiB,
  summarize,
  writesOf,
  type Summary,
} from './stats';

const N = Number(process.env.BENCH_N ?? 1000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1000);
const CONCURRENCY = 16;
/** Sessions opened (and closed) at once in phase 4. */
const OPENING = 25;
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 20 * 60_000);
const AGENT = 'bench-agent';
const TRIVIAL = `def ping(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;
const say = (line = '') => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '-');

interface Case {
  label: string;
  fn: () => Promise<unknown>;
}

interface Measured {
  label: string;
  s: Summary;
  /** Per call, by process group. */
  cpu: Record<string, number>;
  writes: Record<string, number>;
}

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

/** The stack's processes, by group; the runner's sandboxes are read as its descendants. */
interface Probe {
  groups: Record<string, number[]>;
  runner?: number;
}

/**
 * Read as the runner's descendants (descendantsCpuMs): approximate — sandboxes come and go, and a
 * child reaped with SIGCHLD ignored leaves no trace in its parent's cutime — so a block can even
 * read negative. Shown, never summed: both paths run the same tool in the same sandbox.
 */
const SANDBOXES = 'runner-local sandboxes (≈)';
const BENCH = 'bench process (the clients)';

function probeOf(stack: Stack): Probe {
  const groups: Record<string, number[]> = {};
  for (const [name, app] of stack.apps) groups[name] = [app.proc.pid!];
  groups['nats-server'] = pidsOf('nats-server');
  groups.postgres = pidsOf('postgres');
  groups[BENCH] = [process.pid];
  return { groups, runner: stack.apps.get('runner-local')?.proc.pid };
}

function cpuNow(p: Probe): Record<string, number> {
  return { ...cpuMs(p.groups), ...(p.runner ? { [SANDBOXES]: descendantsCpuMs(p.runner) } : {}) };
}

function addDelta(into: Record<string, number>, a: Record<string, number>, b: Record<string, number>): void {
  for (const k of Object.keys(b)) into[k] = (into[k] ?? 0) + b[k]! - (a[k] ?? 0);
}

const perCall = (x: Record<string, number>, n: number) =>
  Object.fromEntries(Object.entries(x).map(([k, v]) => [k, v / n]));

/**
 * Each case `n` times at `concurrency`, in alternating blocks of `block` calls (A, B, A, B…), with
 * the CPU and write syscalls of every process read around each block: per-call latency, calls/s
 * over the blocks' wall time, and CPU per call — drift on a shared machine hits both alike.
 */
async function alternate(
  cases: Case[],
  n: number,
  block: number,
  concurrency: number,
  probe: Probe,
): Promise<Measured[]> {
  const acc = cases.map(() => ({
    samples: [] as number[],
    wall: 0,
    cpu: {} as Record<string, number>,
    writes: {} as Record<string, number>,
  }));
  for (let done = 0; done < n; done += block) {
    for (const [i, c] of cases.entries()) {
      const a = acc[i]!;
      const timed = async () => {
        const t = performance.now();
        await c.fn();
        a.samples.push(performance.now() - t);
      };
      const cpu0 = cpuNow(probe);
      const w0 = writesOf(probe.groups);
      const t0 = performance.now();
      await measure(Math.min(block, n - done), concurrency, timed);
      a.wall += performance.now() - t0;
      addDelta(a.cpu, cpu0, cpuNow(probe));
      addDelta(a.writes, w0, writesOf(probe.groups));
    }
  }
  return cases.map((c, i) => ({
    label: c.label,
    s: summarize(acc[i]!.samples, acc[i]!.wall),
    cpu: perCall(acc[i]!.cpu, n),
    writes: perCall(acc[i]!.writes, n),
  }));
}

/** CPU ms and write syscalls per call of each process, the two paths side by side; the server side summed (the bench's own clients apart). */
function cpuTable(title: string, [g, t]: [Measured, Measured]): void {
  const order = [
    'mcp-gateway',
    'executor',
    'runner-local',
    SANDBOXES,
    'registry',
    'credentials',
    'schema',
    'mcp-sync',
    'web-tools',
    'nats-server',
    'postgres',
  ];
  const keys = [
    ...order.filter((k) => k in g.cpu),
    ...Object.keys(g.cpu).filter((k) => !order.includes(k) && k !== BENCH),
  ];
  const line = (k: string, a: number, b: number, wa: string, wb: string) =>
    `  ${k.padEnd(30)} ${f2(a).padStart(9)} ${f2(b).padStart(9)} ${f2(a - b).padStart(9)} ${wa.padStart(9)} ${wb.padStart(9)}`;
  say(title);
  say(
    `  ${'process'.padEnd(30)} ${'gw cpu'.padStart(9)} ${'nats cpu'.padStart(9)} ${'Δ cpu'.padStart(9)} ${'gw wr'.padStart(9)} ${'nats wr'.padStart(9)}   (ms / write syscalls per call)`,
  );
  // The sandboxes' writes are not read (their processes come and go): their column stays empty.
  for (const k of keys)
    say(
      line(k, g.cpu[k]!, t.cpu[k]!, k === SANDBOXES ? '' : f2(g.writes[k]!), k === SANDBOXES ? '' : f2(t.writes[k]!)),
    );
  const sum = (x: Record<string, number>) => keys.reduce((s, k) => s + (k === SANDBOXES ? 0 : (x[k] ?? 0)), 0);
  say(line('server total (no sandboxes)', sum(g.cpu), sum(t.cpu), f2(sum(g.writes)), f2(sum(t.writes))));
  say(line(BENCH, g.cpu[BENCH]!, t.cpu[BENCH]!, f2(g.writes[BENCH]!), f2(t.writes[BENCH]!)));
}

/** The MCP SDK's own client, initialized (initialize, then notifications/initialized; the SDK then opens its GET stream). */
async function openSession(url: string, token: string, fetchFn?: FetchLike): Promise<Session> {
  const client = new Client({ name: 'bench-gateway', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    ...(fetchFn ? { fetch: fetchFn } : {}),
  });
  await client.connect(transport);
  return { client, transport };
}

/** DELETE (the spec's session end), then the client's close (aborts its GET stream); true when the DELETE was answered 2xx. */
async function closeSession(s: Session): Promise<boolean> {
  let ok = true;
  try {
    await s.transport.terminateSession();
  } catch {
    ok = false;
  }
  await s.client.close().catch(() => undefined);
  return ok;
}

/** `fn(i)` for i < n, `concurrency` at a time, starting none after `deadline` (performance.now()); how many were started. */
async function pool(
  n: number,
  concurrency: number,
  deadline: number,
  fn: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n && performance.now() < deadline) await fn(next++);
    }),
  );
  return next;
}

async function until(deadline: number, done: () => boolean): Promise<boolean> {
  while (!done() && performance.now() < deadline) await sleep(50);
  return done();
}

/** The sessions bucket: live keys (a DELETE leaves a delete marker, not a key) and its stream's messages and bytes. */
async function kvEntries(nats: RawClient, bucket: string): Promise<string> {
  try {
    const info = await (await jetstreamManager(nats.nc)).streams.info(`KV_${bucket}`);
    const kv = await new Kvm(nats.nc).open(bucket);
    let keys = 0;
    for await (const _ of await kv.keys()) keys++;
    return `${keys} live keys (stream: ${info.state.messages} messages, ${(info.state.bytes / 1024).toFixed(0)} KiB)`;
  } catch (e) {
    return `not read (${(e as Error).message})`;
  }
}

/** What kind of box this is: a fork+wait of a small Python process (~0.2 ms normal, 7.5 ms on slow-fork boxes), a bare python3 spawn, the load. */
function boxNote(): string {
  const script =
    'import os, time\nn = 50\nt = time.perf_counter()\nfor _ in range(n):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\nprint((time.perf_counter() - t) / n * 1000)';
  try {
    const fork = Number(execFileSync('/usr/bin/python3', ['-I', '-c', script], { encoding: 'utf8' }));
    const spawns: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      execFileSync('/usr/bin/python3', ['-I', '-c', 'pass']);
      spawns.push(performance.now() - t);
    }
    return `fork+wait of a small Python process ${fork.toFixed(2)} ms, python3 -c pass spawn p50 ${summarize(spawns, 1).p50.toFixed(1)} ms, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`;
  } catch (e) {
    return `not measured (${(e as Error).message})`;
  }
}

/** BENCH_CPU_PROF=<dir>: V8 CPU profiles of the apps on the call path, written when they stop. */
function cpuProfile(app: AppName): string {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? `--cpu-prof --cpu-prof-dir=${dir}/${app}` : '';
}

/**
 * The gateway's V8 heap in use after a full GC, through its inspector (Chrome DevTools Protocol,
 * loopback): RSS alone cannot tell memory held from garbage not yet collected. Bytes, or NaN.
 */
async function heapAfterGc(inspectPort: number): Promise<number> {
  let ws: WebSocket | undefined;
  try {
    const [target] = (await (
      await fetch(`http://127.0.0.1:${inspectPort}/json/list`, { signal: AbortSignal.timeout(5000) })
    ).json()) as Array<{ webSocketDebuggerUrl: string }>;
    const socket = new WebSocket(target!.webSocketDebuggerUrl);
    ws = socket;
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    const replies = new Map<number, (m: { result?: { usedSize?: number } }) => void>();
    socket.onmessage = (ev: MessageEvent) => {
      const m = JSON.parse(String(ev.data)) as { id?: number; result?: { usedSize?: number } };
      if (m.id !== undefined) replies.get(m.id)?.(m);
    };
    let next = 0;
    const send = (method: string) =>
      new Promise<{ result?: { usedSize?: number } }>((resolve, reject) => {
        const id = ++next;
        replies.set(id, resolve);
        setTimeout(() => reject(new Error(`${method}: no answer in 30 s`)), 30_000).unref();
        socket.send(JSON.stringify({ id, method }));
      });
    await send('HeapProfiler.collectGarbage');
    return (await send('Runtime.getHeapUsage')).result?.usedSize ?? NaN;
  } catch {
    return NaN;
  } finally {
    ws?.close();
  }
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function main(): Promise<void> {
  const t0 = performance.now();
  const deadline = t0 + DEADLINE_MS;
  // Whatever hangs, the run ends: the stack's apps go with this process (test/support/stack.ts).
  setTimeout(() => {
    process.stderr.write(`gateway bench: deadline of ${DEADLINE_MS} ms passed, stopping\n`);
    process.exit(2);
  }, DEADLINE_MS + 60_000).unref();
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  const org = `bench-gw-${id}`;
  const box = boxNote();
  await createDatabase(db);
  let stack: Stack | undefined;
  let nats: RawClient | undefined;
  const open: Session[] = [];
  try {
    const inspectPort = await freePort();
    stack = await startStack({
      prefix,
      databaseUrl: databaseUrlFor(db),
      env: { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' },
      appEnv: {
        executor: process.env.BENCH_CPU_PROF ? { NODE_OPTIONS: cpuProfile('executor') } : {},
        // One token makes every request here: the per-token rate limit (50/s, burst 200 by default) would measure itself.
        'mcp-gateway': {
          GATEWAY_RATE_PER_SECOND: '1000000',
          GATEWAY_RATE_BURST: '1000000',
          NODE_OPTIONS: `--inspect=127.0.0.1:${inspectPort} ${cpuProfile('mcp-gateway')}`,
        },
      },
    });
    nats = await RawClient.connect(prefix);
    const c = nats;
    const up = await c.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: TRIVIAL } });
    if (up.error) throw new Error(`upsert: ${JSON.stringify(up.error)}`);
    const attached = await c.req('toolplane.v1.agents.tools.attach', {
      org_id: org,
      agent_id: AGENT,
      tool_names: ['ping'],
    });
    if (attached.error) throw new Error(`attach: ${JSON.stringify(attached.error)}`);
    const token = await c.tokenFor(org);
    const gateway = stack.apps.get('mcp-gateway')!;
    const url = `http://127.0.0.1:${gateway.httpPort}/mcp/agents/${AGENT}`;

    let x = 0;
    const viaGateway = (client: Client) => async () => {
      const r = await client.callTool({ name: 'ping', arguments: { x: ++x } });
      if (r.isError) throw new Error(`gateway call failed: ${JSON.stringify(r.content)}`);
    };
    // The request the gateway itself sends (call-tool.service.ts): tool id, agent, arguments.
    const viaNats = async () => {
      const r = await c.req('toolplane.v1.tools.execute', {
        org_id: org,
        tool_id: up.tool.id,
        agent_id: AGENT,
        args: { x: ++x },
      });
      if (r.status !== 'success') throw new Error(`NATS call failed: ${JSON.stringify(r)}`);
    };

    say(`MCP gateway benchmark (${new Date().toISOString()}): ${N} calls per path and phase, warm-up ${WARMUP} rounds`);
    say(`box: ${box}`);
    say('');

    const heapReady = await heapAfterGc(inspectPort);
    const rssReady = rssKiB(gateway.proc.pid!);
    // 1. Latency, interleaved: one call through the gateway, one over NATS, per round.
    const main = await openSession(url, token);
    open.push(main);
    await main.client.listTools(); // as a client does once; callTool then checks results against the tools' output schemas
    const [g1, t1] = (
      await measureInterleaved(
        [
          { label: 'gateway', fn: viaGateway(main.client) },
          { label: 'nats', fn: viaNats },
        ],
        N,
        WARMUP,
      )
    ).map((r) => r.s) as [Summary, Summary];
    say('1. Latency of one call of a trivial warm Python tool (ping) attached to an agent, sequential, interleaved');
    say('   gateway: MCP SDK Client + StreamableHTTPClientTransport, one session, tools/call (HTTP POST, SSE answer)');
    say('   NATS:    plain NATS request toolplane.v1.tools.execute with an org token, same tool id, agent and args');
    say(
      `   ${'path'.padEnd(10)} ${'n'.padStart(5)} ${'p50 ms'.padStart(8)} ${'p90 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'mean ms'.padStart(8)}`,
    );
    for (const [label, s] of [
      ['gateway', g1],
      ['NATS', t1],
    ] as const)
      say(
        `   ${label.padEnd(10)} ${String(s.n).padStart(5)} ${f2(s.p50).padStart(8)} ${f2(s.p90).padStart(8)} ${f2(s.p99).padStart(8)} ${f2(s.mean).padStart(8)}`,
      );
    const dp50 = g1.p50 - t1.p50;
    say(
      `   gateway − NATS: p50 ${dp50 >= 0 ? '+' : ''}${f2(dp50)} ms (target ≤ +1 ms: ${dp50 <= 1 ? 'met' : 'NOT met'}), p99 ${f2(g1.p99 - t1.p99)} ms; ratio of p50 ${(g1.p50 / t1.p50).toFixed(2)}×`,
    );
    say('');

    // 2. CPU per call, sequential, in alternating blocks of 100.
    const probe = probeOf(stack);
    const seq = (await alternate(
      [
        { label: 'gateway', fn: viaGateway(main.client) },
        { label: 'nats', fn: viaNats },
      ],
      N,
      100,
      1,
      probe,
    )) as [Measured, Measured];
    cpuTable(
      `2. CPU per call by process (utime+stime, /proc), sequential, ${N} calls each in alternating blocks of 100. nats-server and postgres serve the whole machine; the runner's sandboxes (≈) are its descendants, read roughly and not summed`,
      seq,
    );
    say(`   (latency in this phase: gateway p50 ${f2(seq[0].s.p50)} ms, NATS p50 ${f2(seq[1].s.p50)} ms)`);
    say('');
    // 2b. NATS messages and bytes per call on each path, each in a block of its own (the counting subscriber costs CPU).
    for (const [label, fn] of [
      ['gateway', viaGateway(main.client)],
      ['NATS', viaNats],
    ] as const) {
      const counter = await countNats(nats.nc, prefix);
      for (let i = 0; i < N; i++) await fn();
      say(
        natsLines(`2b. ${label}`, await counter.stop(), N)
          .map((l) => `   ${l}`)
          .join('\n'),
      );
    }
    say('');

    // 3. Throughput at concurrency 16: 16 sessions, one call in flight on each; 16 concurrent requests on one NATS connection.
    const sixteen = await Promise.all(Array.from({ length: CONCURRENCY }, () => openSession(url, token)));
    open.push(...sixteen);
    await Promise.all(sixteen.map((s) => s.client.listTools()));
    const idle = [...sixteen];
    const onAnySession = async () => {
      const s = idle.pop()!;
      try {
        await viaGateway(s.client)();
      } finally {
        idle.push(s);
      }
    };
    await measure(CONCURRENCY * 10, CONCURRENCY, onAnySession);
    const par = (await alternate(
      [
        { label: 'gateway', fn: onAnySession },
        { label: 'nats', fn: viaNats },
      ],
      N,
      250,
      CONCURRENCY,
      probe,
    )) as [Measured, Measured];
    say(`3. Concurrency ${CONCURRENCY}, ${N} calls each in alternating blocks of 250`);
    say(
      `   gateway: ${CONCURRENCY} sessions (SDK clients), one call in flight on each;  NATS: ${CONCURRENCY} requests in flight on one connection`,
    );
    say(
      `   gateway ${par[0].s.perSecond.toFixed(0)} calls/s (p50 ${f2(par[0].s.p50)} ms, p99 ${f2(par[0].s.p99)} ms);  NATS ${par[1].s.perSecond.toFixed(0)} calls/s (p50 ${f2(par[1].s.p50)} ms, p99 ${f2(par[1].s.p99)} ms);  ratio ${(par[0].s.perSecond / par[1].s.perSecond).toFixed(2)}×`,
    );
    cpuTable(`   CPU per call by process at concurrency ${CONCURRENCY}`, par);
    say('');

    // 4. Sessions held: SESSIONS SDK clients, each initialized with its GET stream open.
    await Promise.all(open.splice(0).map(closeSession));
    const gwPid = gateway.proc.pid!;
    const bucket = `${prefix}_${MCP_SESSIONS_BUCKET}`;
    let streams = 0;
    let streamRefused = 0;
    const counting: FetchLike = async (input, init) => {
      const res = await fetch(input, init);
      if ((init?.method ?? 'GET') === 'GET') {
        if (res.ok) streams++;
        else streamRefused++;
      }
      return res;
    };
    await sleep(2000);
    const heap0 = await heapAfterGc(inspectPort);
    const rss0 = rssKiB(gwPid);
    const benchRss0 = rssKiB(process.pid);
    const gwCpu0 = cpuMs({ gw: [gwPid] }).gw ?? 0;
    let failedOpen = 0;
    let firstError = '';
    const held: Session[] = [];
    const tOpen = performance.now();
    const phaseEnd = Math.min(deadline, tOpen + 180_000);
    await pool(SESSIONS, OPENING, phaseEnd, async () => {
      try {
        held.push(await openSession(url, token, counting));
      } catch (e) {
        failedOpen++;
        firstError ||= (e as Error).message;
      }
    });
    const allStreams = await until(
      Math.min(deadline, performance.now() + 30_000),
      () => streams + streamRefused >= held.length,
    );
    const openMs = performance.now() - tOpen;
    const gwCpuOpen = (cpuMs({ gw: [gwPid] }).gw ?? 0) - gwCpu0;
    await sleep(2000);
    const heap1 = await heapAfterGc(inspectPort);
    const rss1 = rssKiB(gwPid);
    const benchRss1 = rssKiB(process.pid);
    const kvHeld = await kvEntries(c, bucket);
    // A session held is a session usable: a few of them list their tools.
    let listed = 0;
    for (const s of held.filter((_, i) => i % Math.max(1, Math.floor(held.length / 10)) === 0))
      listed += await s.client.listTools().then(
        () => 1,
        () => 0,
      );
    const tClose = performance.now();
    let deleted = 0;
    const closeEnd = Math.min(deadline, tClose + 120_000);
    const closing = held.splice(0);
    const closedStarted = await pool(closing.length, OPENING, closeEnd, async (i) => {
      if (await closeSession(closing[i]!)) deleted++;
    });
    for (const s of closing.slice(closedStarted)) await s.client.close().catch(() => undefined);
    const closeMs = performance.now() - tClose;
    await sleep(3000);
    const heap2 = await heapAfterGc(inspectPort);
    const rss2 = rssKiB(gwPid);
    const kvAfter = await kvEntries(c, bucket);
    const opened = held.length + closing.length;
    say(
      `4. ${SESSIONS} sessions held at once: SDK Client + transport each, initialize + initialized, then the SDK's own GET stream; opened ${OPENING} at a time from this one process`,
    );
    say(
      `   opened ${closing.length}/${SESSIONS} (${failedOpen} failed${firstError ? `: ${firstError.slice(0, 120)}` : ''}) in ${(openMs / 1000).toFixed(1)} s, ${((closing.length / openMs) * 1000).toFixed(0)} sessions/s; GET streams open ${streams}${streamRefused ? `, refused ${streamRefused}` : ''}${allStreams ? '' : ' (not all within 30 s)'}`,
    );
    say(
      `   gateway CPU to open them: ${f2(gwCpuOpen / Math.max(1, closing.length))} ms per session (initialize + initialized + GET)`,
    );
    say(
      `   gateway RSS: before ${(rss0 / 1024).toFixed(1)} MiB, held ${(rss1 / 1024).toFixed(1)} MiB, after DELETE ${(rss2 / 1024).toFixed(1)} MiB; ${((rss1 - rss0) / Math.max(1, closing.length)).toFixed(1)} KiB per held session (RSS, no forced GC)`,
    );
    say(
      `   gateway V8 heap after GC: before ${mib(heap0)} MiB, held ${mib(heap1)} MiB, after DELETE ${mib(heap2)} MiB; ${((heap1 - heap0) / 1024 / Math.max(1, closing.length)).toFixed(1)} KiB per held session`,
    );
    say(
      `   bench process RSS (the ${closing.length} clients): ${(benchRss0 / 1024).toFixed(1)} → ${(benchRss1 / 1024).toFixed(1)} MiB`,
    );
    say(`   KV bucket ${bucket}: held ${kvHeld}; after DELETE ${kvAfter}`);
    const gwCalls = WARMUP + 3 * N + CONCURRENCY * 10; // phase 1 (warm-up and measured), 2, and 3 (its warm-up and measured)
    say(
      `   over phases 1-3 (${gwCalls} gateway calls, ${2 + CONCURRENCY} sessions): gateway heap after GC ${mib(heapReady)} → ${mib(heap0)} MiB (${((heap0 - heapReady) / 1024 / gwCalls).toFixed(2)} KiB per call), RSS ${(rssReady / 1024).toFixed(1)} → ${(rss0 / 1024).toFixed(1)} MiB`,
    );
    say(
      `   ${listed} sampled held sessions answered tools/list; DELETE answered 2xx for ${deleted}/${opened} in ${(closeMs / 1000).toFixed(1)} s`,
    );
    say('');

    say(`Summary (${N} calls per path and phase; loopback; box: ${box.split(',')[0]})`);
    say(`  ${''.padEnd(44)} ${'gateway'.padStart(9)} ${'NATS'.padStart(9)} ${'Δ'.padStart(9)} ${'ratio'.padStart(7)}`);
    const sumRow = (label: string, a: number, b: number, digits = 2) =>
      say(
        `  ${label.padEnd(44)} ${a.toFixed(digits).padStart(9)} ${b.toFixed(digits).padStart(9)} ${(a - b).toFixed(digits).padStart(9)} ${(Math.abs(b) >= 0.05 ? `${(a / b).toFixed(2)}×` : '-').padStart(7)}`,
      );
    sumRow('p50 ms, c=1 interleaved', g1.p50, t1.p50);
    sumRow('p99 ms, c=1 interleaved', g1.p99, t1.p99);
    const server = (m: Measured) =>
      Object.entries(m.cpu).reduce((s, [k, v]) => s + (k === BENCH || k === SANDBOXES ? 0 : v), 0);
    sumRow('CPU ms per call, server side*, c=1', server(seq[0]), server(seq[1]));
    sumRow('  of which mcp-gateway', seq[0].cpu['mcp-gateway'] ?? 0, seq[1].cpu['mcp-gateway'] ?? 0);
    sumRow('CPU ms per call, client (bench process), c=1', seq[0].cpu[BENCH]!, seq[1].cpu[BENCH]!);
    sumRow(`calls/s, c=${CONCURRENCY}`, par[0].s.perSecond, par[1].s.perSecond, 0);
    sumRow(`CPU ms per call, server side*, c=${CONCURRENCY}`, server(par[0]), server(par[1]));
    say(
      `  ${`sessions held (of ${SESSIONS})`.padEnd(44)} ${String(closing.length).padStart(9)}   gateway +${((rss1 - rss0) / 1024).toFixed(1)} MiB RSS, ${((rss1 - rss0) / Math.max(1, closing.length)).toFixed(1)} KiB/session, ${f2(gwCpuOpen / Math.max(1, closing.length))} ms CPU/session open`,
    );
    say(
      `  ${'gateway V8 heap after GC per held session'.padEnd(44)} ${`${((heap1 - heap0) / 1024 / Math.max(1, closing.length)).toFixed(1)} KiB`.padStart(9)}   left by ${gwCalls} calls: ${((heap0 - heapReady) / 1024 / gwCalls).toFixed(2)} KiB/call`,
    );
    say('  * every app, nats-server and postgres, not the sandboxes (same work on both paths; read only roughly)');
    say(
      `  total ${((performance.now() - t0) / 1000).toFixed(0)} s; load at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await Promise.all(open.map(closeSession));
    await nats?.close().catch(() => undefined);
    if (stack && process.env.BENCH_LOG_LEVEL) for (const app of stack.apps.values()) say(app.output().slice(-4000));
    await stack?.stop();
    await dropDatabase(db).catch(() => undefined);
    await deleteStreams(prefix).catch(() => undefined);
    await deleteKvStream(`KV_${prefix}_${MCP_SESSIONS_BUCKET}`);
  }
}

/** The sessions bucket's stream (deleteStreams matches `<prefix>_…`, a KV stream is `KV_<prefix>_…`). */
async function deleteKvStream(name: string): Promise<void> {
  const c = await RawClient.connect('').catch(() => undefined);
  if (!c) return;
  try {
    await (await jetstreamManager(c.nc)).streams.delete(name);
  } catch {
    // never created
  } finally {
    await c.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
