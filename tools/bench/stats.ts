export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  perSecond: number;
}

export function summarize(samplesMs: number[], wallMs: number): Summary {
  const s = [...samplesMs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { n: s.length, p50: q(0.5), p90: q(0.9), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, perSecond: (s.length / wallMs) * 1000 };
}

export function row(label: string, x: Summary): string {
  const f = (v: number) => v.toFixed(2).padStart(8);
  return `${label.padEnd(44)} ${String(x.n).padStart(5)} ${f(x.p50)} ${f(x.p90)} ${f(x.p99)} ${x.perSecond.toFixed(1).padStart(9)}`;
}

export const HEADER = `${'case'.padEnd(44)} ${'n'.padStart(5)} ${'p50 ms'.padStart(8)} ${'p90 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'calls/s'.padStart(9)}`;

/** Runs `fn` n times with `concurrency` workers; returns per-call latencies and wall time. */
export async function measure(n: number, concurrency: number, fn: () => Promise<void>): Promise<Summary> {
  const samples: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t = performance.now();
        await fn();
        samples.push(performance.now() - t);
      }
    }),
  );
  return summarize(samples, performance.now() - t0);
}

/**
 * Cases measured interleaved (one call of each case per round, after `warmup` rounds), so drift on
 * a noisy machine hits every case alike: each case's summary, in the order given.
 */
export async function measureInterleaved(cases: ReadonlyArray<{ label: string; fn: () => Promise<unknown> }>, n: number, warmup = 10): Promise<Array<{ label: string; s: Summary }>> {
  for (let w = 0; w < warmup; w++) for (const c of cases) await c.fn();
  const samples = cases.map(() => [] as number[]);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    for (const [k, c] of cases.entries()) {
      const t = performance.now();
      await c.fn();
      samples[k]!.push(performance.now() - t);
    }
  }
  const wall = performance.now() - t0;
  return cases.map((c, k) => ({ label: c.label, s: summarize(samples[k]!, wall / cases.length) }));
}
