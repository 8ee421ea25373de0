/**
 * `npm run bench:builtins`: the built-in run_code (python) against a custom tool doing the same
 * work (`sum(range(1000))`, printing a line), each through `tools.execute`, interleaved in one run
 * on one stack, so the difference is run_code's own cost (the generated harness: parsing the code,
 * capturing its output, answering the JSON text). Also run_code js for reference. BENCH_N
 * (default 200) calls per case after a warm-up. Starts its own stack (fresh database, own subject
 * prefix) on the local NATS and Postgres.
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { HEADER, measureInterleaved, row } from './stats';

const N = Number(process.env.BENCH_N ?? 200);
const ORG = 'bench';
const SAME = `def same_work() -> int:
    """Print a line and sum the first thousand integers.
    """
    print("working")
    return sum(range(1000))
`;

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({ prefix, databaseUrl: databaseUrlFor(db), env: { LOG_LEVEL: 'warn' } });
  const client = await RawClient.connect(prefix);
  try {
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: ORG, tool: { source_code: SAME } });
    if (up.error) throw new Error(JSON.stringify(up.error));
    const execute = (body: Record<string, unknown>) => async () => {
      const r = await client.req('toolplane.v1.tools.execute', { org_id: ORG, ...body }, { timeoutMs: 60_000 });
      if (r.status !== 'success') throw new Error(JSON.stringify(r).slice(0, 500));
    };
    const cases = [
      { label: 'custom tool (baseline)', fn: execute({ tool_name: 'same_work', args: {} }) },
      {
        label: 'run_code python',
        fn: execute({
          tool_name: 'run_code',
          args: { code: 'print("working")\nsum(range(1000))', language: 'python' },
        }),
      },
      {
        label: 'run_code js',
        fn: execute({
          tool_name: 'run_code',
          args: {
            code: 'console.log("working");\nlet s = 0; for (let i = 0; i < 1000; i++) s += i;\ns',
            language: 'js',
          },
        }),
      },
    ];
    // Interleaved, so drift on a noisy box hits every case alike.
    const stats = await measureInterleaved(cases, N);
    process.stdout.write(
      `\nToolplane built-ins benchmark (${new Date().toISOString()}, ${N} sequential tools.execute per case, provider local)\n${HEADER}\n`,
    );
    for (const x of stats) process.stdout.write(`${row(x.label, x.s)}\n`);
    const [base, py] = [stats[0]!.s, stats[1]!.s];
    process.stdout.write(
      `\nrun_code python p50 ${py.p50.toFixed(2)} ms vs custom tool p50 ${base.p50.toFixed(2)} ms: ${(py.p50 - base.p50).toFixed(2)} ms (${((py.p50 / base.p50 - 1) * 100).toFixed(1)}%)\n`,
    );
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
