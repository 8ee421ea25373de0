/**
 * `npm run build && node dist/tools/bench/streams.bench.js`: what resumable SSE streams cost a
 * plain tools/call that never drops. One stack, two gateways on it — one with
 * GATEWAY_RESUMABLE_STREAMS (the default: the priming event, each event and the response appended
 * to JetStream), one without (the baseline) — one SDK client session on each (protocol
 * 2025-11-25, so the priming event is sent), the same trivial warm Python tool. Alternating blocks
 * of BENCH_BLOCK sequential calls per gateway, BENCH_N calls each after BENCH_WARMUP: latency
 * (p50/p90/p99) and CPU per call of that gateway and of nats-server (utime + stime), since the
 * stores land there. Figures only, no assertion.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startApp, startStack, stopProcess, type RunningApp, type Stack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { cpuMs, HEADER, pidsOf, row, summarize } from './stats';

const N = Number(process.env.BENCH_N ?? 2000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 250);
const AGENT = 'bench-agent';
const say = (line = '') => process.stdout.write(`${line}\n`);
const TRIVIAL = `def ping(x: int) -> int:
    """Return x.

    Args:
        x: a number
    """
    return x
`;

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  const org = `bench-streams-${id}`;
  await createDatabase(db);
  let stack: Stack | undefined;
  let baseline: RunningApp | undefined;
  let nats: RawClient | undefined;
  const clients: Client[] = [];
  try {
    const gwEnv = { GATEWAY_RATE_PER_SECOND: '1000000', GATEWAY_RATE_BURST: '1000000' };
    const opts = {
      prefix,
      databaseUrl: databaseUrlFor(db),
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'mcp-gateway': gwEnv },
    };
    stack = await startStack(opts);
    baseline = await startApp('mcp-gateway', {
      ...opts,
      appEnv: { 'mcp-gateway': { ...gwEnv, GATEWAY_RESUMABLE_STREAMS: 'false' } },
    });
    nats = await RawClient.connect(prefix);
    for (const r of [
      await nats.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: TRIVIAL } }),
      await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: AGENT, tool_names: ['ping'] }),
    ]) {
      if (r.error) throw new Error(JSON.stringify(r.error));
    }
    const token = await nats.tokenFor(org);
    const gateways = { resumable: stack.apps.get('mcp-gateway')!, baseline };
    const cases = await Promise.all(
      (Object.entries(gateways) as Array<[string, RunningApp]>).map(async ([label, app]) => {
        const client = new Client({ name: 'bench', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${app.httpPort}/mcp/agents/${AGENT}`), {
            requestInit: { headers: { authorization: `Bearer ${token}` } },
          }),
        );
        clients.push(client);
        return { label, pid: app.proc.pid!, client, samples: [] as number[], wallMs: 0, gwCpu: 0, natsCpu: 0 };
      }),
    );
    let x = 0;
    const call = async (client: Client) => {
      const r = await client.callTool({ name: 'ping', arguments: { x: ++x } });
      if (r.isError) throw new Error(JSON.stringify(r.content));
    };
    for (const c of cases) for (let i = 0; i < WARMUP; i++) await call(c.client);
    const natsPids = pidsOf('nats-server');
    for (let done = 0, b = 0; done < N; done += BLOCK, b++) {
      for (const c of b % 2 ? [...cases].reverse() : cases) {
        const before = cpuMs({ gw: [c.pid], nats: natsPids });
        const t0 = performance.now();
        for (let i = 0; i < Math.min(BLOCK, N - done); i++) {
          const s = performance.now();
          await call(c.client);
          c.samples.push(performance.now() - s);
        }
        c.wallMs += performance.now() - t0;
        const after = cpuMs({ gw: [c.pid], nats: natsPids });
        c.gwCpu += (after.gw ?? 0) - (before.gw ?? 0);
        c.natsCpu += (after.nats ?? 0) - (before.nats ?? 0);
      }
    }
    say(
      `streams bench: ${N} sequential tools/call per gateway in alternating blocks of ${BLOCK}; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    say(HEADER);
    for (const c of cases) say(row(`tools/call, ${c.label}`, summarize(c.samples, c.wallMs)));
    say(`${'CPU ms per call'.padEnd(44)} ${'gateway'.padStart(9)} ${'nats-server'.padStart(12)}`);
    for (const c of cases)
      say(
        `${c.label.padEnd(44)} ${(c.gwCpu / c.samples.length).toFixed(3).padStart(9)} ${(c.natsCpu / c.samples.length).toFixed(3).padStart(12)}`,
      );
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    if (baseline) await stopProcess(baseline.proc);
    await stack?.stop();
    await nats?.close();
    await dropDatabase(db).catch(() => undefined);
    await deleteStreams(prefix).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    process.stderr.write(`${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
