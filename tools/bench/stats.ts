import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

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

/*
 * CPU, writes and memory of the stack's processes, read from /proc (Linux; the same user, or root,
 * for /proc/<pid>/io). CPU per call is steadier than latency on a shared machine: read before and
 * after a block of calls. Times in /proc/<pid>/stat are clock ticks of 10 ms (USER_HZ 100).
 */
const TICK_MS = 10;

/** Fields of /proc/<pid>/stat after the command name (index 0 is the state), or undefined when gone. */
function statOf(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(') ') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Pids of the processes named exactly `name` (pgrep -x); [] when there are none. */
export function pidsOf(name: string): number[] {
  try {
    return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** CPU time (user + system, ms) of each group of processes so far; {} where there is no /proc. */
export function cpuMs(pids: Record<string, number[]>): Record<string, number> {
  if (!existsSync('/proc/self/stat')) return {};
  const ms = (pid: number) => {
    const f = statOf(pid);
    return f ? (Number(f[11]) + Number(f[12])) * TICK_MS : 0;
  };
  return Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, ps.reduce((a, p) => a + ms(p), 0)]));
}

/**
 * CPU time (ms) of everything `pid` started so far: its live descendants (their own time and what
 * they reaped) plus the children `pid` itself reaped (cutime + cstime) — e.g. a runner's sandboxes.
 * A descendant that ends between two readings moves its whole life's time into its parent's
 * cutime: short-lived ones (one run) count right, a long-lived one that ends in between counts
 * its earlier time too.
 */
export function descendantsCpuMs(pid: number): number {
  if (!existsSync('/proc/self/stat')) return 0;
  const children = new Map<number, number[]>();
  const stats = new Map<number, string[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statOf(Number(name));
    if (!f) continue;
    stats.set(Number(name), f);
    const ppid = Number(f[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(Number(name));
  }
  const reaped = (f: string[]) => (Number(f[13]) + Number(f[14])) * TICK_MS;
  let total = stats.has(pid) ? reaped(stats.get(pid)!) : 0;
  const todo = [...(children.get(pid) ?? [])];
  while (todo.length) {
    const p = todo.pop()!;
    const f = stats.get(p)!;
    total += (Number(f[11]) + Number(f[12])) * TICK_MS + reaped(f);
    todo.push(...(children.get(p) ?? []));
  }
  return total;
}

/** Write syscalls of each group of processes so far (/proc/<pid>/io syscw): each NATS or socket flush is one. */
export function writesOf(pids: Record<string, number[]>): Record<string, number> {
  const writes = (pid: number) => {
    try {
      return Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  return Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, ps.reduce((a, p) => a + writes(p), 0)]));
}

/** Resident set size of a process (KiB, /proc/<pid>/status VmRSS); NaN when it cannot be read. */
export function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}
