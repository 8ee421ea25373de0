/**
 * `npm run bench:reads`: read your writes over two executor replicas (issue 31). A sync call
 * without an idempotency key answers before its record is written (write-behind); an
 * executions.get of its id sent the instant the reply arrives goes to either replica (queue group).
 * Measured, in alternating blocks of 100 in one run (BENCH_N per case, default 1000, c=1):
 * - "fresh": the get sent at the reply — NOT_FOUND count (target 0) and its latency;
 * - "written" (the baseline): a get of an id answered at least 2 s before, long written.
 * The fresh get's extra latency is the write it waits for: the replica holding the record writes
 * it at once (asked by the other replica when the get reached that one).
 */
import { CALL_APPS } from '../../test/support/stack';
import { benchStack } from './bench-stack';
import { HEADER, row, summarize } from './stats';

const N = Number(process.env.BENCH_N ?? 1000);
const BLOCK = 100;
const say = (line: string) => process.stdout.write(`${line}\n`);
const PING = `def ping(x: int) -> int:
    """Return x.

    Args:
        x (int): A number.
    """
    return x
`;

async function main(): Promise<void> {
  const { stack, client, stop } = await benchStack({
    apps: CALL_APPS,
  });
  try {
    await stack.addReplica('executor');
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: 'bench', tool: { source_code: PING } });
    if (up.error) throw new Error(JSON.stringify(up.error));
    let x = 0;
    const execute = async (): Promise<string> => {
      const r = await client.req('toolplane.v1.tools.execute', {
        org_id: 'bench',
        tool_name: 'ping',
        args: { x: ++x },
      });
      if (r.status !== 'success') throw new Error(JSON.stringify(r));
      return r.execution_id as string;
    };
    const get = async (executionId: string): Promise<{ ms: number; notFound: boolean }> => {
      const t = performance.now();
      const r = await client.req('toolplane.v1.executions.get', { org_id: 'bench', execution_id: executionId });
      const ms = performance.now() - t;
      if (r.error && r.error.code !== 'EXECUTION_NOT_FOUND') throw new Error(JSON.stringify(r.error));
      return { ms, notFound: r.error?.code === 'EXECUTION_NOT_FOUND' };
    };
    // Warm both replicas, and make ids that are long written for the baseline.
    const old: string[] = [];
    for (let i = 0; i < Math.min(N, 400); i++) old.push(await execute());
    await new Promise((r) => setTimeout(r, 2000));

    const fresh: number[] = [];
    const written: number[] = [];
    let freshNotFound = 0;
    let writtenNotFound = 0;
    let freshWall = 0;
    let writtenWall = 0;
    for (let done = 0; done < N; done += BLOCK) {
      let t = performance.now();
      for (let i = 0; i < BLOCK; i++) {
        const g = await get(await execute());
        fresh.push(g.ms);
        if (g.notFound) freshNotFound++;
      }
      freshWall += performance.now() - t;
      t = performance.now();
      for (let i = 0; i < BLOCK; i++) {
        const g = await get(old[(done + i) % old.length]!);
        written.push(g.ms);
        if (g.notFound) writtenNotFound++;
      }
      writtenWall += performance.now() - t;
    }
    const f = summarize(fresh, freshWall);
    const w = summarize(written, writtenWall);
    say(`read your writes: executions.get over 2 executor replicas, c=1, ${N} per case, blocks of ${BLOCK}`);
    say(HEADER);
    say(row('get sent at the reply (fresh)', f));
    say(row('get of a record written 2 s+ before (baseline)', w));
    say(`EXECUTION_NOT_FOUND: fresh ${freshNotFound} of ${N} (target 0); baseline ${writtenNotFound} of ${N}`);
    const slow = fresh.filter((ms) => ms > 100).length;
    say(
      `fresh gets over 100 ms (a write that took long, or the holder not reached and the window waited out): ${slow} of ${N}`,
    );
    say(
      `fresh / baseline: p50 ${(f.p50 / w.p50).toFixed(2)}×, p99 ${(f.p99 / w.p99).toFixed(2)}× (the fresh get waits for one write: the replica holding the record writes it at once when asked)`,
    );
  } finally {
    await stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
