/**
 * `npm run bench`: executions of a trivial tool through the public API (agent → executor → runner
 * → agent) against a bare `/usr/bin/python3 -c` spawn measured in the same run.
 * Starts its own stack (fresh database, own subject prefix) on the local NATS and Postgres.
 * BENCH_N (default 300) calls per case.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { HEADER, measure, row } from './stats';

const N = Number(process.env.BENCH_N ?? 300);
const TRIVIAL = `def ping(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;

function spawnPython(): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/usr/bin/python3', ['-I', '-c', 'import json; print(json.dumps(1))'], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.resume();
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`python exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({ prefix, databaseUrl: databaseUrlFor(db), env: { LOG_LEVEL: 'warn' }, appEnv: { 'runner-local': { RUNNER_MAX_CONCURRENCY: '16' } } });
  const client = await RawClient.connect(prefix);
  try {
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: 'bench', tool: { source_code: TRIVIAL } });
    if (up.error) throw new Error(JSON.stringify(up.error));
    let i = 0;
    const call = async () => {
      const r = await client.req('toolplane.v1.tools.execute', { org_id: 'bench', tool_name: 'ping', args: { x: ++i } });
      if (r.status !== 'success') throw new Error(JSON.stringify(r));
    };
    for (let w = 0; w < 20; w++) await call(); // warm the tool cache and the JIT
    await measure(20, 1, spawnPython);

    const results = [
      ['bare /usr/bin/python3 -c spawn (baseline)', await measure(N, 1, spawnPython)],
      ['tools.execute via NATS, concurrency 1', await measure(N, 1, call)],
      ['tools.execute via NATS, concurrency 8', await measure(N, 8, call)],
      ['tools.execute via NATS, concurrency 16', await measure(N, 16, call)],
      ['tools.get via NATS (registry, no sandbox)', await measure(N, 1, async () => void (await client.req('toolplane.v1.tools.get', { org_id: 'bench', name: 'ping' })))],
    ] as const;
    process.stdout.write(`\nToolplane execute benchmark (${new Date().toISOString()}, ${N} calls per case)\n${HEADER}\n`);
    for (const [label, s] of results) process.stdout.write(`${row(label, s)}\n`);
    const base = results[0][1].p50;
    const c1 = results[1][1].p50;
    process.stdout.write(`\nexecute p50 / bare spawn p50 = ${(c1 / base).toFixed(2)}x (overhead ${(c1 - base).toFixed(2)} ms per call)\n`);
  } finally {
    await client.close();
    await stack.stop();
    await deleteStreams(prefix);
    await dropDatabase(db);
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
