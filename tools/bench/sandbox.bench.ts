/**
 * `npm run bench:sandbox`: the isolated local runner through the public API (agent → executor →
 * runner → agent), warm and cold, at concurrency 1 and 16, against the same-run baselines of a
 * fresh isolated interpreter per call (bwrap with the same namespaces + python3) and a bare
 * `/usr/bin/python3` spawn. Then what network costs (a network-enabled call gets a sandbox of its
 * own: from a ready one, and back to back, when each call waits for its namespace and slirp4netns)
 * and fairness (another org's call latency while one org floods the runner).
 * Starts its own stack (fresh database, own subject prefix).
 * BENCH_N (default 400) calls per warm case; BENCH_COLD (default 20) new tools for the cold case;
 * BENCH_NET (default 40) network-enabled calls per case; BENCH_FAIR (default 40) calls of the other org.
 *
 * CPU per call (issue 28), first: BENCH_CPU_N (default 1000) warm calls and as many fresh isolated
 * interpreters (bwrap + python3, spawned and reaped by the bench: the baseline), in alternating
 * blocks of 100: CPU ms per call of each app, nats-server, postgres, the runner's sandbox processes
 * (approximate) and the bench's reaped spawns, write syscalls and wake-ups per call; then NATS
 * messages and bytes per warm call in a block of their own (BENCH_NATS_N, default 1000).
 * BENCH_CPU=only runs just that section. BENCH_CPU_PROF=<dir>: every app writes a V8 CPU profile
 * to <dir>/<app>/ when it stops, <dir>/window.json marks the CPU block (profile-breakdown.ts).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { ALL_APPS, startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import {
  countNats,
  cpuProfileEnv,
  HEADER,
  measure,
  measureUsageBlocks,
  natsLines,
  profiledWindow,
  row,
  stackGroups,
  usageLines,
  type Summary,
} from './stats';

const N = Number(process.env.BENCH_N ?? 400);
const COLD = Number(process.env.BENCH_COLD ?? 20);
const NET = Number(process.env.BENCH_NET ?? 40);
const FAIR = Number(process.env.BENCH_FAIR ?? 40);
const CPU = process.env.BENCH_CPU ?? '';
const CPU_N = Number(process.env.BENCH_CPU_N ?? 1000);
const NATS_N = Number(process.env.BENCH_NATS_N ?? 1000);
const tool = (name: string) => `def ${name}(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;

function spawnAndWait(cmd: string, args: string[], ids: { uid?: number; gid?: number } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' }, ...ids });
    p.stdout.resume();
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}: ${err}`))));
  });
}

/** A fresh isolated interpreter per call: the namespaces and mounts of a slot, one python3 per call. */
const ISOLATED = [
  '--unshare-all',
  '--die-with-parent',
  '--new-session',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--tmpfs',
  '/tmp',
  '--clearenv',
  '--remount-ro',
  '/',
  '--',
  '/usr/bin/python3',
  '-I',
  '-B',
  '-c',
  'import json, sys; sys.stdout.write(json.dumps(1))',
];
const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    env: { LOG_LEVEL: 'warn' },
    appEnv: {
      ...Object.fromEntries(ALL_APPS.map((a) => [a, cpuProfileEnv(a)])),
      'runner-local': {
        RUNNER_MAX_CONCURRENCY: '16',
        RUNNER_POOL_WARM: '4',
        RUNNER_POOL_MAX_PER_ENV: '16',
        RUNNER_ALLOW_NETWORK: 'true',
        RUNNER_POOL_WARM_NET: '2',
        ...cpuProfileEnv('runner-local'),
      },
    },
  });
  const client = await RawClient.connect(prefix);
  try {
    const upsert = async (name: string) => {
      const r = await client.req('toolplane.v1.tools.upsert', { org_id: 'bench', tool: { source_code: tool(name) } });
      if (r.error) throw new Error(JSON.stringify(r.error));
    };
    await upsert('ping');
    let i = 0;
    const call =
      (name = 'ping', org = 'bench') =>
      async () => {
        const r = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: name, args: { x: ++i } });
        if (r.status !== 'success') throw new Error(JSON.stringify(r));
      };
    for (let w = 0; w < 50; w++) await call()(); // warm the tool cache and the JIT
    await measure(50, 16, call());
    const bare = () => spawnAndWait('/usr/bin/python3', ['-I', '-c', 'import json; print(json.dumps(1))']);
    const isolated = () => spawnAndWait('/usr/bin/bwrap', ISOLATED, asNobody);
    await measure(10, 1, bare);
    await measure(10, 1, isolated);

    {
      const g = stackGroups(stack.apps, { bench: [process.pid] });
      g.reaped = { 'bench-spawned bwrap + python3 (reaped)': process.pid };
      const cases = [
        { label: 'fresh isolated interpreter per call (bwrap, baseline)', fn: isolated },
        { label: 'execute warm, concurrency 1', fn: call() },
      ];
      const res = await profiledWindow('execute warm (alternating with fresh bwrap interpreters)', CPU_N, () =>
        measureUsageBlocks(cases, g, CPU_N),
      );
      process.stdout.write(
        `\nCPU per call (${new Date().toISOString()}, ${CPU_N} calls per case in alternating blocks of 100; nats-server and postgres count every client on the machine)\n`,
      );
      for (const r of res)
        process.stdout.write(
          `${usageLines(r.label, r.use, r.calls).join('\n')}\n  wall ${(r.wallMs / r.calls).toFixed(2)} ms per call\n`,
        );
      const counter = await countNats(client.nc, prefix);
      const warm = call();
      for (let k = 0; k < NATS_N; k++) await warm();
      process.stdout.write(`${natsLines('execute warm', await counter.stop(), NATS_N).join('\n')}\n`);
      if (CPU === 'only') return;
    }

    // Cold: the first call of a tool never seen before (registered just now; not in any cache).
    const coldSamples: number[] = [];
    for (let k = 0; k < COLD; k++) {
      const name = `cold_${id}_${k}`;
      await upsert(name);
      const t = performance.now();
      await call(name)();
      coldSamples.push(performance.now() - t);
    }
    const cold = summarizeSamples(coldSamples);

    // The warm cases run before the fresh-sandbox baselines: tearing down hundreds of namespaces
    // (network namespaces above all) is deferred kernel work that would otherwise run during them.
    const warm1 = await measure(N, 1, call());
    const warm16 = await measure(N, 16, call());
    // Network: an org whose sandbox config turns it on; each call gets a sandbox of its own.
    const netOrg = 'bench-net';
    const r0 = await client.req('toolplane.v1.sandbox-configs.upsert', {
      org_id: netOrg,
      provider: 'local',
      config: { network: 'egress' },
    });
    if (r0.error) throw new Error(JSON.stringify(r0.error));
    const r1 = await client.req('toolplane.v1.tools.upsert', { org_id: netOrg, tool: { source_code: tool('ping') } });
    if (r1.error) throw new Error(JSON.stringify(r1.error));
    await call('ping', netOrg)();
    const spaced: number[] = [];
    for (let k = 0; k < NET; k++) {
      await new Promise((r) => setTimeout(r, 400)); // the pool has its warm network sandboxes ready again
      const t = performance.now();
      await call('ping', netOrg)();
      spaced.push(performance.now() - t);
    }
    const netReady = summarizeSamples(spaced);
    const netBackToBack = await measure(NET, 1, call('ping', netOrg));

    // Fairness: one org keeps 48 slow calls in flight (100 ms each, 3x the places), another calls one at a time.
    const floodOrg = 'bench-flood';
    const r2 = await client.req('toolplane.v1.tools.upsert', {
      org_id: floodOrg,
      tool: {
        source_code:
          'def nap() -> str:\n    """Sleep 100 ms."""\n    import time\n    time.sleep(0.1)\n    return "z"\n',
      },
    });
    if (r2.error) throw new Error(JSON.stringify(r2.error));
    await client.req('toolplane.v1.tools.upsert', { org_id: 'bench-other', tool: { source_code: tool('ping') } });
    const otherAlone = await measure(FAIR, 1, call('ping', 'bench-other'));
    let flooding = true;
    let floodCalls = 0;
    const floodWorkers = Array.from({ length: 48 }, async () => {
      while (flooding) {
        const r = await client.req(
          'toolplane.v1.tools.execute',
          { org_id: floodOrg, tool_name: 'nap', args: {} },
          { timeoutMs: 120_000 },
        );
        if (r.status !== 'success') throw new Error(JSON.stringify(r));
        floodCalls++;
      }
    });
    await new Promise((r) => setTimeout(r, 1000));
    const otherUnderFlood = await measure(FAIR, 1, call('ping', 'bench-other'));
    flooding = false;
    await Promise.all(floodWorkers);

    const results: Array<[string, Summary]> = [
      ['bare /usr/bin/python3 spawn (baseline)', await measure(Math.min(N, 200), 1, bare)],
      ['fresh isolated interpreter per call (bwrap)', await measure(Math.min(N, 200), 1, isolated)],
      ['fresh isolated interpreter per call, conc 16', await measure(Math.min(N, 200), 16, isolated)],
      ['execute warm, concurrency 1', warm1],
      ['execute warm, concurrency 16', warm16],
      ['execute cold (first call of a new tool)', cold],
      ['network on: a ready sandbox (calls spaced)', netReady],
      ['network on: back to back (namespace per call)', netBackToBack],
      ['other org alone', otherAlone],
      ['other org while one org floods (48 in flight)', otherUnderFlood],
    ];
    process.stdout.write(
      `\nToolplane sandbox benchmark (${new Date().toISOString()}, public API, bubblewrap driver)\n${HEADER}\n`,
    );
    for (const [label, s] of results) process.stdout.write(`${row(label, s)}\n`);
    const [bareS, iso, iso16] = results.map((r) => r[1]);
    process.stdout.write(
      [
        '',
        `warm p50 ${warm1.p50.toFixed(2)} ms (target ≤ 3), p99 ${warm1.p99.toFixed(2)} ms (target ≤ 15)`,
        `concurrency 16: ${warm16.perSecond.toFixed(0)} calls/s (target ≥ 300)`,
        `vs a fresh isolated interpreter per call: ${(iso!.p50 / warm1.p50).toFixed(1)}x faster at p50, ${(warm16.perSecond / iso16!.perSecond).toFixed(1)}x the throughput at concurrency 16 (target ≥ 5x)`,
        `cold p50 ${cold.p50.toFixed(2)} ms = ${(cold.p50 / bareS!.p50).toFixed(2)}x a bare python3 spawn (target ≤ 1.5x)`,
        `network on: +${(netReady.p50 - warm1.p50).toFixed(2)} ms p50 from a ready sandbox; ${netBackToBack.p50.toFixed(2)} ms p50 back to back (its own namespace and slirp4netns each call)`,
        `fairness: the other org's call p50 ${otherUnderFlood.p50.toFixed(2)} ms / p99 ${otherUnderFlood.p99.toFixed(2)} ms while another org floods (${floodCalls} flood calls of 100 ms), vs ${otherAlone.p50.toFixed(2)} / ${otherAlone.p99.toFixed(2)} ms alone`,
        '',
      ].join('\n'),
    );
  } finally {
    await client.close();
    await stack.stop();
    await deleteStreams(prefix);
    await dropDatabase(db);
  }
}

function summarizeSamples(samples: number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const total = s.reduce((a, b) => a + b, 0);
  return {
    n: s.length,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    mean: total / s.length,
    perSecond: (s.length / total) * 1000,
  };
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
