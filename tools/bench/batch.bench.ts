/**
 * `npm run bench:batch`: one agent step of 8 parallel-safe tool calls that each take 200 ms, sent
 * as one `tools.execute-batch` against the same 8 calls sent as sequential `tools.execute`s (what
 * a runtime does without the batch subject), in one run on one stack. BENCH_N (default 10) steps
 * per case. Starts its own stack (fresh database, own subject prefix) on the local NATS and Postgres.
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { HEADER, row, summarize } from './stats';

const N = Number(process.env.BENCH_N ?? 10);
const CALLS = 8;
const NAP = `def nap(x: int) -> int:
    """Sleep 200 ms, then return x.

    Args:
        x (int): A number.
    """
    import time
    time.sleep(0.2)
    return x
`;

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
      executor: { EXECUTE_BATCH_MAX_CONCURRENCY: String(CALLS) },
      'runner-local': {
        RUNNER_MAX_CONCURRENCY: String(CALLS),
        RUNNER_MAX_CONCURRENCY_PER_ORG: String(CALLS),
        RUNNER_POOL_WARM: String(CALLS),
      },
    },
  });
  const client = await RawClient.connect(prefix);
  try {
    const up = await client.req('toolplane.v1.tools.upsert', {
      org_id: 'bench',
      tool: { source_code: NAP, enable_parallel_execution: true },
    });
    if (up.error) throw new Error(JSON.stringify(up.error));
    const calls = Array.from({ length: CALLS }, (_, i) => ({ call_id: `call-${i}`, tool_name: 'nap', args: { x: i } }));
    const batch = async () => {
      const r = await client.req('toolplane.v1.tools.execute-batch', { org_id: 'bench', calls }, { timeoutMs: 60_000 });
      if (r.error || r.results.some((x: { status: string }) => x.status !== 'success'))
        throw new Error(JSON.stringify(r).slice(0, 500));
    };
    const sequential = async () => {
      for (const c of calls) {
        const r = await client.req(
          'toolplane.v1.tools.execute',
          { org_id: 'bench', tool_name: c.tool_name, args: c.args },
          { timeoutMs: 60_000 },
        );
        if (r.status !== 'success') throw new Error(JSON.stringify(r).slice(0, 500));
      }
    };
    for (let w = 0; w < 2; w++) {
      await batch();
      await sequential();
    }
    // Interleaved, so drift on a noisy box hits both cases alike.
    const seq: number[] = [];
    const one: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      for (const [fn, out] of [
        [sequential, seq],
        [batch, one],
      ] as const) {
        const t = performance.now();
        await fn();
        out.push(performance.now() - t);
      }
    }
    const wall = performance.now() - t0;
    const seqS = summarize(seq, wall / 2);
    const batchS = summarize(one, wall / 2);
    process.stdout.write(
      `\nToolplane batch benchmark (${new Date().toISOString()}, ${N} steps of ${CALLS} calls of 200 ms each per case)\n${HEADER}\n`,
    );
    process.stdout.write(`${row(`${CALLS} sequential tools.execute (baseline)`, seqS)}\n`);
    process.stdout.write(`${row(`one tools.execute-batch of ${CALLS}`, batchS)}\n`);
    process.stdout.write(
      `\nstep p50: batch ${batchS.p50.toFixed(1)} ms vs sequential ${seqS.p50.toFixed(1)} ms = ${(seqS.p50 / batchS.p50).toFixed(2)}x faster (ideal ${CALLS}x; one 200 ms call is the floor)\n`,
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
