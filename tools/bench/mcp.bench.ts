/**
 * `npm run bench:mcp`: (1) sync of an in-process MCP server with 1,000 tools (10 pages) through
 * toolplane.v1.mcp.servers.add — wall time and tools lost (goal ≤ 2 s, 0 lost) — then a no-change
 * resync and a resync with 100 changed tools; (2) one MCP tool call through Toolplane
 * (agent → executor → mcp-sync → server) against a direct SDK call to the same server, same run,
 * sequentially and at concurrency 8 and 16 (throughput in calls/s for both paths).
 * Starts its own stack (fresh database, own subject prefix) on the local NATS and Postgres.
 * BENCH_N (default 1000) calls per case after BENCH_WARMUP (300) warm-up rounds; BENCH_STACK_ENV="K=V,..." settings for every app; BENCH_CPU_PROF=<dir> writes CPU profiles of mcp-sync, executor and credentials; BENCH_NATS_N (1000) calls in the NATS message-count block.
 * BENCH_USER=1 adds a third case to the interleaved rounds: the same call made for an end user
 * (`user_id`, a user with no secrets of their own), so the cost of a user on an MCP call is read
 * beside the call without one in the same run.
 * BENCH_BASELINE_ROOT: another checkout, built: a second stack runs from its dist/ and its calls are
 * interleaved with this tree's (a fourth case), and each tree's apps' CPU per MCP call is printed.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { echoTool, FakeMcpServer } from '../../test/support/mcp-servers';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import {
  countNats,
  cpuMs,
  cpuProfileEnv,
  HEADER,
  measure,
  measureInterleaved,
  natsLines,
  pidsOf,
  profiledWindow,
  row,
  wakeupsOf,
  writesOf,
  type Summary,
} from './stats';

const N = Number(process.env.BENCH_N ?? 1000);
const TOOLS = 1000;
const WARMUP = Number(process.env.BENCH_WARMUP ?? 300);
/** Calls in the NATS counting block (messages and bytes per call). */
const NATS_N = Number(process.env.BENCH_NATS_N ?? 1000);
const say = (line: string) => process.stdout.write(`${line}\n`);

async function countTools(client: RawClient, org: string, tag: string): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const r = await client.req('toolplane.v1.tools.list', {
      org_id: org,
      tags: [tag],
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    n += r.tools.length;
    cursor = r.next_cursor ?? undefined;
  } while (cursor);
  return n;
}

/** BENCH_STACK_ENV="K=V,K2=V2": settings given to every app of the stack (an A/B of one setting in one sitting). */
function stackEnv(): Record<string, string> {
  const pairs = (process.env.BENCH_STACK_ENV ?? '').split(',').filter(Boolean);
  return Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

/** BENCH_CPU_PROF=<dir>: the services on the call path write V8 CPU profiles there (<dir>/<app>/*.cpuprofile) when they stop; <dir>/window.json marks the measured block. */
const cpuProfile = cpuProfileEnv;

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['registry', 'credentials', 'mcp-sync', 'executor'],
    env: { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', ...stackEnv() },
    // MCP_SERVER_CACHE_TTL_MS=0 gives the per-call server read of before, for an A/B in one sitting.
    appEnv: {
      'mcp-sync': {
        ...(process.env.MCP_SERVER_CACHE_TTL_MS
          ? { MCP_SERVER_CACHE_TTL_MS: process.env.MCP_SERVER_CACHE_TTL_MS }
          : {}),
        ...cpuProfile('mcp-sync'),
      },
      executor: cpuProfile('executor'),
      credentials: cpuProfile('credentials'),
    },
  });
  // BENCH_BASELINE_ROOT: another checkout's dist/ as a second stack, its calls interleaved with this tree's (CPU per call of each tree's apps).
  const baseRoot = process.env.BENCH_BASELINE_ROOT;
  const baseId = randomBytes(4).toString('hex');
  const baseDb = `tp_bench_${baseId}`;
  if (baseRoot) await createDatabase(baseDb);
  const baseStack = baseRoot
    ? await startStack({
        prefix: `bench${baseId}`,
        root: baseRoot,
        databaseUrl: databaseUrlFor(baseDb),
        apps: ['registry', 'credentials', 'mcp-sync', 'executor'],
        env: { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', ...stackEnv() },
      })
    : undefined;
  const server = new FakeMcpServer();
  server.tools = Array.from({ length: TOOLS }, (_, i) => echoTool(`tool_${String(i).padStart(4, '0')}`));
  server.pageSize = 100;
  await server.start();
  const client = await RawClient.connect(prefix);
  const baseClient = baseStack ? await RawClient.connect(baseStack.prefix) : undefined;
  const direct = new Client({ name: 'bench-direct', version: '1' });
  try {
    const org = `bench-${id}`;
    say(`MCP sync: ${TOOLS} tools in ${TOOLS / server.pageSize} pages (in-process Streamable HTTP server, loopback)`);
    let t0 = performance.now();
    const added = await client.req(
      'toolplane.v1.mcp.servers.add',
      { org_id: org, server: { name: 'big', transport: 'streamable_http', url: server.url } },
      { timeoutMs: 60_000 },
    );
    const addMs = performance.now() - t0;
    if (added.error) throw new Error(JSON.stringify(added.error));
    const stored = await countTools(client, org, 'mcp:big');
    say(
      `  add + first sync        ${addMs.toFixed(0).padStart(6)} ms   added ${added.sync.added}, stored ${stored}, lost ${TOOLS - stored}, errors ${added.sync.errors.length} (goal ≤ 2000 ms, 0 lost)`,
    );
    t0 = performance.now();
    const same = await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'big' }, { timeoutMs: 60_000 });
    say(
      `  resync, nothing changed ${(performance.now() - t0).toFixed(0).padStart(6)} ms   unchanged ${same.sync.unchanged}`,
    );
    for (let i = 0; i < 100; i++) server.tools[i * 10] = echoTool(`tool_${String(i * 10).padStart(4, '0')}`, 'v2:');
    for (let i = 0; i < 100; i++) (server.tools[i * 10]!.def as { description: string }).description = 'Changed.';
    t0 = performance.now();
    const changed = await client.req(
      'toolplane.v1.mcp.servers.sync',
      { org_id: org, name: 'big' },
      { timeoutMs: 60_000 },
    );
    say(
      `  resync, 100 changed     ${(performance.now() - t0).toFixed(0).padStart(6)} ms   updated ${changed.sync.updated}, unchanged ${changed.sync.unchanged}`,
    );

    say('');
    say(`One MCP tool call (echo), ${N} sequential calls each, same server`);
    say(HEADER);
    await direct.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const directCall = async () => {
      const r = await direct.callTool({ name: 'tool_0001', arguments: { text: 'x' } });
      if (r.isError) throw new Error('direct call failed');
    };
    const viaToolplane = async (extra: Record<string, unknown> = {}) => {
      const r = await client.req('toolplane.v1.tools.execute', {
        org_id: org,
        tool_name: 'tool_0001',
        args: { text: 'x' },
        ...extra,
      });
      if (r.status !== 'success') throw new Error(`call failed: ${JSON.stringify(r.error)}`);
    };
    if (baseClient) {
      const r = await baseClient.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'big', transport: 'streamable_http', url: server.url } },
        { timeoutMs: 60_000 },
      );
      if (r.error) throw new Error(`baseline: ${JSON.stringify(r.error)}`);
    }
    const viaBaseline = async () => {
      const r = await baseClient!.req('toolplane.v1.tools.execute', {
        org_id: org,
        tool_name: 'tool_0001',
        args: { text: 'x' },
      });
      if (r.status !== 'success') throw new Error(`baseline call failed: ${JSON.stringify(r.error)}`);
    };
    const asUser = process.env.BENCH_USER === '1';
    const viaToolplaneAsUser = () => viaToolplane({ user_id: 'bench-user' });
    // Services run for days: the figures are of warm processes (JIT, pools, caches), not of their first calls.
    for (let i = 0; i < WARMUP; i++)
      await Promise.all([
        directCall(),
        viaToolplane(),
        ...(asUser ? [viaToolplaneAsUser()] : []),
        ...(baseClient ? [viaBaseline()] : []),
      ]);
    const pids: Record<string, number[]> = {
      'bench (client + server, both cases)': [process.pid],
      'nats-server': pidsOf('nats-server'),
      postgres: pidsOf('postgres'),
    };
    for (const [name, app] of stack.apps) pids[name] = [app.proc.pid!];
    for (const [name, app] of baseStack?.apps ?? []) pids[`baseline ${name}`] = [app.proc.pid!];
    const cpu0 = cpuMs(pids);
    const w0 = writesOf(pids);
    const z0 = wakeupsOf(pids);
    // Interleaved (one direct call, one through Toolplane, per round): drift on a shared machine hits both alike.
    const cases = [
      { label: 'direct', fn: directCall },
      { label: 'toolplane', fn: () => viaToolplane() },
      ...(asUser ? [{ label: 'toolplane, end user', fn: viaToolplaneAsUser }] : []),
      ...(baseClient ? [{ label: 'toolplane, BENCH_BASELINE_ROOT', fn: viaBaseline }] : []),
    ];
    const measured = (
      await profiledWindow('MCP echo via Toolplane (interleaved with direct calls)', asUser ? 2 * N : N, () =>
        measureInterleaved(cases, N, 0),
      )
    ).map((c) => c.s);
    const [d, t] = measured as [Summary, Summary];
    const u = asUser ? measured[2] : undefined;
    const b = baseClient ? measured[measured.length - 1] : undefined;
    const cpu1 = cpuMs(pids);
    const w1 = writesOf(pids);
    const z1 = wakeupsOf(pids);
    say(row('direct SDK client.callTool', d));
    say(row('toolplane.v1.tools.execute (NATS, 2 hops)', t));
    if (b) say(row('the same call, BENCH_BASELINE_ROOT', b));
    if (u)
      say(
        `${row('the same call for an end user (user_id)', u)}\n  end user − none: p50 ${(u.p50 - t.p50).toFixed(2)} ms (CPU below: per Toolplane call, both cases together)`,
      );
    say(
      `overhead p50 ${(t.p50 - d.p50).toFixed(2)} ms, p99 ${(t.p99 - d.p99).toFixed(2)} ms; target p50 ≤ 1.2 × direct + 2 ms = ${(1.2 * d.p50 + 2).toFixed(2)} ms: ${t.p50 <= 1.2 * d.p50 + 2 ? 'met' : 'NOT met'}`,
    );
    // CPU per call is steadier than latency on a shared machine (postgres counts every database here).
    const calls = u ? 2 * N : N;
    if (Object.keys(cpu1).length)
      say(
        `CPU ms per Toolplane call: ${Object.keys(cpu1)
          .map((k) => `${k} ${((cpu1[k]! - cpu0[k]!) / calls).toFixed(2)}`)
          .join(', ')}`,
      );
    if (b) {
      // Each tree's apps did N calls of their own; nats-server carried both trees' calls (2N).
      const sum = (baseline: boolean) =>
        Object.keys(cpu1)
          .filter((k) => stack.apps.has(k.replace(/^baseline /, '') as never) && k.startsWith('baseline ') === baseline)
          .reduce((a, k) => a + cpu1[k]! - cpu0[k]!, 0) / N;
      const nats = (cpu1['nats-server']! - cpu0['nats-server']!) / (2 * N);
      say(
        `this tree vs BENCH_BASELINE_ROOT, CPU ms per MCP call in the apps: ${sum(false).toFixed(2)} vs ${sum(true).toFixed(2)} = ${(sum(false) / sum(true)).toFixed(2)}x; nats-server ${nats.toFixed(2)} per call of either (shared); p50 ${t.p50.toFixed(2)} vs ${b.p50.toFixed(2)} ms`,
      );
    }
    if (existsSync('/proc/self/io'))
      say(
        `write syscalls per Toolplane call: ${Object.keys(w1)
          .map((k) => `${k} ${((w1[k]! - w0[k]!) / calls).toFixed(2)}`)
          .join(', ')}`,
      );
    if (existsSync('/proc/self/status'))
      say(
        `wake-ups (voluntary context switches) per Toolplane call: ${Object.keys(z1)
          .map((k) => `${k} ${((z1[k]! - z0[k]!) / calls).toFixed(1)}`)
          .join(', ')}`,
      );
    // NATS traffic in a block of its own (the counting subscriber costs CPU): messages and bytes per call.
    const counter = await countNats(client.nc, prefix);
    for (let i = 0; i < NATS_N; i++) await viaToolplane();
    say(natsLines('MCP echo via Toolplane', await counter.stop(), NATS_N).join('\n'));
    const throughput: string[] = [
      `throughput (calls/s)     direct ${(1000 / d.mean).toFixed(0)}, toolplane ${(1000 / t.mean).toFixed(0)} at concurrency 1 (1 / mean latency)`,
    ];
    for (const c of [8, 16]) {
      const dc = await measure(N, c, directCall);
      say(row(`direct SDK client.callTool, concurrency ${c}`, dc));
      const tc = await measure(N, c, viaToolplane);
      say(row(`toolplane.v1.tools.execute, concurrency ${c}`, tc));
      throughput.push(
        `${' '.repeat(24)} direct ${dc.perSecond.toFixed(0)}, toolplane ${tc.perSecond.toFixed(0)} at concurrency ${c}`,
      );
    }
    say(throughput.join('\n'));
  } finally {
    await direct.close().catch(() => undefined);
    await client.close();
    await server.stop();
    if (process.env.BENCH_LOG_LEVEL)
      for (const app of stack.apps.values())
        say(
          app
            .output()
            .split('\n')
            .filter((l) => /synced|external tools/.test(l))
            .join('\n'),
        );
    await stack.stop();
    await dropDatabase(db);
    await deleteStreams(prefix);
    if (baseStack) {
      await baseClient?.close();
      await baseStack.stop();
      await dropDatabase(baseDb);
      await deleteStreams(baseStack.prefix);
    }
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
