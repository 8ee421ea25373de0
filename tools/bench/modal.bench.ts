/**
 * `npm run bench:modal`: a warm call through runner-modal (the whole public path: agent → executor →
 * runner-modal → Modal) against a sandbox created, the code run and the sandbox terminated per call
 * (`sandboxes.create`, `exec`, `terminate` with the modal SDK), in the same run, both against the
 * Modal fake (tools/fakes/modal) with Modal's independently measured median sandbox create latency
 * (2.7 s) as its create latency: what the warm pool saves, not what Modal's network adds to each
 * round trip. Then the pool under bursts: BENCH_BURST calls spread over 1 s after BENCH_IDLE_MS idle,
 * twice (the second finds the pool the first one grew), with the pool's hit rate (calls that found a
 * free sandbox at once) and the calls that did not wait for a sandbox to be created.
 * BENCH_N (default 50) warm calls; BENCH_BASELINE (default 5) create-run-terminate calls;
 * BENCH_CREATE_MS (default 2700); BENCH_WARM (default 2) warm sandboxes; BENCH_MAX (default 10) per org.
 * BENCH_ROOT: another checkout whose dist/ to run (the pool before a change: run the bench once per
 * root, on the same box, one after the other).
 */
import { ModalClient } from 'modal';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { startModalFake } from '../fakes/modal/modal-fake';

const N = Number(process.env.BENCH_N ?? 50);
const BASELINE = Number(process.env.BENCH_BASELINE ?? 5);
const CREATE_MS = Number(process.env.BENCH_CREATE_MS ?? 2700);
const WARM = Number(process.env.BENCH_WARM ?? 2);
const MAX = Number(process.env.BENCH_MAX ?? 10);
const BURST = Number(process.env.BENCH_BURST ?? 50);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const ROOT = process.env.BENCH_ROOT;
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
  p99: number;
  mean: number;
}

function figures(samples: number[]): Figures {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { n: s.length, p50: q(0.5), p95: q(0.95), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
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
  const prefix = `benchmodal${id}`;
  const token = { id: `ak-bench-${id}`, secret: `as-bench-${id}` };
  const org = 'bench-modal';
  const fake = await startModalFake({ createLatencyMs: CREATE_MS, tokens: [token] });
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['schema', 'registry', 'credentials', 'executor', 'runner-modal'],
    ...(ROOT ? { root: ROOT } : {}),
    env: { LOG_LEVEL: 'warn' },
    // Room for a sandbox's create (2.7 s) and probe within a call: the runner waits at most until the tool's timeout no longer fits.
    appEnv: {
      executor: { RUNNER_REPLY_MARGIN_MS: '20000' },
      'runner-modal': {
        MODAL_SERVER_URL: fake.serverUrl,
        MODAL_PYTHON: '/usr/bin/python3',
        MODAL_WARM_SANDBOXES: String(WARM),
        MODAL_MAX_SANDBOXES_PER_ORG: String(MAX),
      },
    },
  });
  const client = await RawClient.connect(prefix);
  const metric = async (name: string) =>
    Number(
      (await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-modal')!.healthPort}/metrics`)).text()).match(
        new RegExp(`^${name} (\\d+)`, 'm'),
      )?.[1] ?? NaN,
    );
  try {
    const ok = async (subject: string, body: Record<string, unknown>) => {
      const r = await client.req(subject, body, { timeoutMs: 120_000 });
      if (r.error) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
      return r;
    };
    await ok('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_ID',
      value: token.id,
    });
    await ok('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_SECRET',
      value: token.secret,
    });
    await ok('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: TOOL, metadata_: { sandbox: 'modal' } },
    });
    const call = async (x: number) => {
      for (let i = 0; ; i++) {
        const r = await client.req(
          'toolplane.v1.tools.execute',
          { org_id: org, tool_name: 'ping', args: { x } },
          { timeoutMs: 120_000 },
        );
        // ENVIRONMENT_BUILDING is retryable by contract: a sandbox is on its way.
        if (r.error?.code === 'ENVIRONMENT_BUILDING' && i < 600) {
          await new Promise((res) => setTimeout(res, 100));
          continue;
        }
        if (r.status !== 'success' || r.provider !== 'modal' || r.func_return !== x) throw new Error(JSON.stringify(r));
        return;
      }
    };
    for (let w = 0; w < 5; w++) await call(w); // the first call waits for a sandbox (create + probe)
    const createsBefore = fake.stats().creates;
    const warm = await timed(N, (i) => call(i));
    const warmCreates = fake.stats().creates - createsBefore;

    // A sandbox per call, directly with the SDK against the same fake.
    process.env.MODAL_SERVER_URL = fake.serverUrl;
    const modal = new ModalClient({ tokenId: token.id, tokenSecret: token.secret, logLevel: 'error' });
    const app = await modal.apps.fromName('bench-per-call', { createIfMissing: true });
    const image = modal.images.fromRegistry('python:3.12-slim');
    const perCall = await timed(BASELINE, async (i) => {
      const sandbox = await modal.sandboxes.create(app, image);
      try {
        const p = await sandbox.exec(['/usr/bin/python3', '-I', '-c', `import json; print(json.dumps(${i}))`]);
        const [out, code] = await Promise.all([p.stdout.readText(), p.wait()]);
        if (code !== 0 || out.trim() !== String(i)) throw new Error(`unexpected output ${out}`);
      } finally {
        await sandbox.terminate();
      }
    });

    // Bursts after idling: BURST calls spread over one second, twice.
    const burstOnce = async (round: number) => {
      await new Promise((r) => setTimeout(r, IDLE_MS));
      const alive = await metric('toolplane_modal_sandboxes_alive');
      const hits0 = await metric('toolplane_modal_pool_hits_total');
      const cold0 = await metric('toolplane_modal_cold_starts_total');
      const created0 = await metric('toolplane_modal_sandbox_creates_total');
      // Not in builds before this metric existed (NaN: not shown).
      const onNew0 = await metric('toolplane_modal_calls_on_new_sandbox_total');
      const samples: number[] = [];
      await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          new Promise((r) => setTimeout(r, (i * 1000) / BURST)).then(async () => {
            const t = performance.now();
            await call(1000 * round + i);
            samples.push(performance.now() - t);
          }),
        ),
      );
      return {
        f: figures(samples),
        alive,
        hits: (await metric('toolplane_modal_pool_hits_total')) - hits0,
        cold: (await metric('toolplane_modal_cold_starts_total')) - cold0,
        created: (await metric('toolplane_modal_sandbox_creates_total')) - created0,
        onNew: (await metric('toolplane_modal_calls_on_new_sandbox_total')) - onNew0,
      };
    };
    const bursts = [await burstOnce(1), await burstOnce(2)];

    const line = (label: string, f: Figures) =>
      `${label.padEnd(62)} ${String(f.n).padStart(5)} ${f.p50.toFixed(1).padStart(9)} ${f.p95.toFixed(1).padStart(9)} ${f.p99.toFixed(1).padStart(9)} ${f.mean.toFixed(1).padStart(9)}`;
    process.stdout.write(
      [
        '',
        `Toolplane Modal benchmark (${new Date().toISOString()}, ${ROOT ? `dist/ of ${ROOT}` : 'this checkout'}, Modal fake with create latency ${CREATE_MS} ms, sandboxes under bubblewrap on this machine)`,
        `${'case'.padEnd(62)} ${'n'.padStart(5)} ${'p50 ms'.padStart(9)} ${'p95 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'mean ms'.padStart(9)}`,
        line('warm call through runner-modal (execute → executor → runner)', warm),
        line('create-exec-terminate per call (modal SDK directly)', perCall),
        ...bursts.map((b, i) =>
          line(`burst ${i + 1}: ${BURST} calls in 1 s after ${IDLE_MS} ms idle (${WARM} warm, max ${MAX})`, b.f),
        ),
        '',
        `warm: ${warmCreates} sandbox(es) created during ${N} calls; per call: ${BASELINE} created`,
        `ratio: a warm call is ${(perCall.p50 / warm.p50).toFixed(1)}x faster at p50, ${(perCall.p95 / warm.p95).toFixed(1)}x at p95`,
        ...bursts.map(
          (b, i) =>
            `burst ${i + 1}: ${b.alive} sandbox(es) alive before it; pool hit rate ${((100 * b.hits) / Math.max(1, b.hits + b.cold)).toFixed(0)}% (${b.hits} found a free sandbox at once, ${b.cold} waited${Number.isNaN(b.onNew) ? '' : `, of which ${b.onNew} for a sandbox created for them`}); ${b.created} sandbox(es) created during it`,
        ),
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
