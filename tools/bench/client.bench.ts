/**
 * `npm run bench:client`: what @toolplane/client adds to a call, on its own stack (registry,
 * schema, credentials; fresh database and prefix). In the same run, alternating:
 * - baseline: a raw `nc.request` of toolplane.v1.tools.get (JSON bytes + authorization header);
 * - client: `client.tools.get` (request check, trace injection, reply parse against the contract).
 * Then the CLI's start-up: `toolplane --json tools ls` as a process, beside `node -e 0`.
 *
 * BENCH_N samples per case (default 2000), BENCH_N_CLI process runs (default 20).
 */
import { headers as natsHeaders } from '@nats-io/transport-node';
import { ToolplaneClient } from '@toolplane/client';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor, natsUrl, ROOT } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { HEADER, row, summarize } from './stats';

const N = Number(process.env.BENCH_N ?? 2000);
const N_CLI = Number(process.env.BENCH_N_CLI ?? 20);
const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

function processRuns(n: number, argv: string[], env: Record<string, string>): number[] {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = spawnSync(process.execPath, argv, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      encoding: 'utf8',
    });
    samples.push(performance.now() - t);
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  }
  return samples;
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['registry', 'schema', 'credentials'],
    env: { LOG_LEVEL: 'warn' },
  });
  const raw = await RawClient.connect(prefix);
  try {
    const org = `bench-${id}`;
    const token = await raw.tokenFor(org);
    const client = await ToolplaneClient.connect({ nats: raw.nc, prefix, org, token });
    await client.tools.upsert({
      org_id: org,
      tool: {
        source_code:
          'def bench_get(a: int) -> int:\n    """Get.\n\n    Args:\n        a (int): A.\n    """\n    return a\n',
      },
    });
    const body = new TextEncoder().encode(JSON.stringify({ org_id: org, name: 'bench_get' }));
    const subject = `${prefix}.toolplane.v1.tools.get`;
    const rawGet = async () => {
      const h = natsHeaders();
      h.set('authorization', `Bearer ${token}`);
      const m = await raw.nc.request(subject, body, { timeout: 5_000, headers: h });
      if ((m.json() as { error?: unknown }).error) throw new Error('raw tools.get failed');
    };
    const clientGet = async () => {
      await client.tools.get({ org_id: org, name: 'bench_get' });
    };
    for (let i = 0; i < 200; i++) await Promise.all([rawGet(), clientGet()]); // warm-up
    // Alternate rounds so both see the same load.
    const rounds = 4;
    const rawS: number[] = [];
    const clientS: number[] = [];
    let rawWall = 0;
    let clientWall = 0;
    const timed = async (fn: () => Promise<void>, samples: number[]): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < N / rounds; i++) {
        const t = performance.now();
        await fn();
        samples.push(performance.now() - t);
      }
      return performance.now() - t0;
    };
    for (let r = 0; r < rounds; r++) {
      rawWall += await timed(rawGet, rawS);
      clientWall += await timed(clientGet, clientS);
    }
    const rawSum = summarize(rawS, rawWall);
    const clientSum = summarize(clientS, clientWall);
    out(`client overhead, tools.get, sequential (${N} calls each, alternating rounds)`);
    out(HEADER);
    out(row('raw nc.request (baseline)', rawSum));
    out(row('client.tools.get', clientSum));
    out(
      `p50 overhead: ${(clientSum.p50 - rawSum.p50).toFixed(3)} ms (${((clientSum.p50 / rawSum.p50 - 1) * 100).toFixed(1)} %)`,
    );
    out();
    const env = { TOOLPLANE_NATS_URL: natsUrl(), TOOLPLANE_TOKEN: token, TOOLPLANE_ORG: org, TOOLPLANE_PREFIX: prefix };
    const nodeS = processRuns(N_CLI, ['-e', '0'], env);
    const cliS = processRuns(N_CLI, [join(ROOT, 'dist', 'tools', 'cli', 'main.js'), '--json', 'tools', 'ls'], env);
    out(`CLI start-up (${N_CLI} process runs each)`);
    out(HEADER);
    out(
      row(
        'node -e 0 (baseline)',
        summarize(
          nodeS,
          nodeS.reduce((a, b) => a + b, 0),
        ),
      ),
    );
    out(
      row(
        'toolplane --json tools ls',
        summarize(
          cliS,
          cliS.reduce((a, b) => a + b, 0),
        ),
      ),
    );
  } finally {
    await raw.close();
    await stack.stop();
    await dropDatabase(db);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  },
);
