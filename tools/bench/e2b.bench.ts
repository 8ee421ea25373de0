/**
 * `npm run bench:e2b`: a warm call through runner-e2b (the whole public path: agent → executor →
 * runner-e2b → E2B), against Letta's behaviour in the same run: a sandbox created, the code run and
 * the sandbox killed, per call (`Sandbox.create`, `commands.run`, `kill` with the e2b SDK). Both
 * against the E2B fake (tools/fakes/e2b) with E2B's published median time-to-interactive as its
 * create latency (440 ms): what reuse saves, not what E2B's network adds to each round trip.
 * BENCH_N (default 100) warm calls; BENCH_BASELINE (default 30) create-run-kill calls;
 * BENCH_CREATE_MS (default 440) the fake's create latency.
 */
import { randomBytes } from 'node:crypto';
import { Sandbox } from 'e2b';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { startE2bFake } from '../fakes/e2b/e2b-fake';

const N = Number(process.env.BENCH_N ?? 100);
const BASELINE = Number(process.env.BENCH_BASELINE ?? 30);
const CREATE_MS = Number(process.env.BENCH_CREATE_MS ?? 440);
const TOOL = `def ping(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;

interface Figures {
  n: number;
  p50: number;
  p95: number;
  mean: number;
}

function figures(samples: number[]): Figures {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { n: s.length, p50: q(0.5), p95: q(0.95), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

async function timed(n: number, fn: (i: number) => Promise<void>): Promise<Figures> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    samples.push(performance.now() - t);
  }
  return figures(samples);
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `benche2b${id}`;
  const apiKey = `e2b_bench_${id}`;
  const org = 'bench-e2b';
  const fake = await startE2bFake({ createLatencyMs: CREATE_MS, apiKeys: [apiKey] });
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['schema', 'registry', 'credentials', 'executor', 'runner-e2b'],
    env: { LOG_LEVEL: 'warn' },
    appEnv: { 'runner-e2b': { E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } },
  });
  const client = await RawClient.connect(prefix);
  try {
    const ok = async (subject: string, body: Record<string, unknown>) => {
      const r = await client.req(subject, body, { timeoutMs: 120_000 });
      if (r.error) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
      return r;
    };
    await ok('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      provider: 'e2b',
      key: 'E2B_API_KEY',
      value: apiKey,
    });
    await ok('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: TOOL, metadata_: { sandbox: 'e2b' } } });
    const call = async (x: number) => {
      const r = await client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'ping', args: { x } },
        { timeoutMs: 120_000 },
      );
      if (r.status !== 'success' || r.provider !== 'e2b' || r.func_return !== x)
        throw Object.assign(new Error(JSON.stringify(r)), { reply: r });
    };
    // The first call makes the org's sandbox (ENVIRONMENT_BUILDING while it is made), then warm up.
    for (let i = 0; ; i++) {
      try {
        await call(-1);
        break;
      } catch (e) {
        if ((e as { reply?: { error?: { code?: string } } }).reply?.error?.code !== 'ENVIRONMENT_BUILDING' || i > 600)
          throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (let w = 0; w < 10; w++) await call(w);
    const createsBefore = fake.stats().creates;
    const warm = await timed(N, (i) => call(i));
    const warmCreates = fake.stats().creates - createsBefore;

    // Letta's way, directly with the SDK against the same fake: a sandbox per call.
    const opts = { apiKey, apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl };
    const perCall = await timed(BASELINE, async (i) => {
      const sandbox = await Sandbox.create('base', opts);
      try {
        const r = await sandbox.commands.run(`/usr/bin/python3 -I -c 'import json; print(json.dumps(${i}))'`);
        if (r.stdout.trim() !== String(i)) throw new Error(`unexpected output ${r.stdout}`);
      } finally {
        await sandbox.kill();
      }
    });

    const line = (label: string, f: Figures) =>
      `${label.padEnd(58)} ${String(f.n).padStart(5)} ${f.p50.toFixed(1).padStart(9)} ${f.p95.toFixed(1).padStart(9)} ${f.mean.toFixed(1).padStart(9)}`;
    process.stdout.write(
      [
        '',
        `Toolplane E2B benchmark (${new Date().toISOString()}, E2B fake with create latency ${CREATE_MS} ms, sandboxes under bubblewrap on this machine)`,
        `${'case'.padEnd(58)} ${'n'.padStart(5)} ${'p50 ms'.padStart(9)} ${'p95 ms'.padStart(9)} ${'mean ms'.padStart(9)}`,
        line('warm call through runner-e2b (execute → executor → runner)', warm),
        line('create-run-kill per call (e2b SDK directly, Letta-style)', perCall),
        '',
        `warm: ${warmCreates} sandbox(es) created during ${N} calls; create-run-kill: ${BASELINE} created`,
        `ratio: a warm call is ${(perCall.p50 / warm.p50).toFixed(1)}x faster at p50, ${(perCall.p95 / warm.p95).toFixed(1)}x at p95`,
        '',
      ].join('\n'),
    );
  } finally {
    await client.close();
    await stack.stop();
    await fake.close();
    await deleteStreams(prefix);
    await dropDatabase(db);
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
