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
  return {
    n: s.length,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    mean: s.reduce((a, b) => a + b, 0) / s.length,
    perSecond: (s.length / wallMs) * 1000,
  };
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
export async function measureInterleaved(
  cases: ReadonlyArray<{ label: string; fn: () => Promise<unknown> }>,
  n: number,
  warmup = 10,
): Promise<Array<{ label: string; s: Summary }>> {
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

/** CPU ms that `pid` reaped from its ended children (cutime + cstime): e.g. a bench's own baseline spawns. */
export function reapedCpuMs(pid: number): number {
  const f = statOf(pid);
  return f ? (Number(f[13]) + Number(f[14])) * TICK_MS : 0;
}

/**
 * Voluntary context switches of a process so far, all its threads (/proc/<pid>/task/<tid>/status):
 * each is a sleep and a later wake-up (Node's event loop, its worker threads, nats-server's). A
 * thread that ended in between takes its count with it.
 */
function wakeupsOfPid(pid: number): number {
  const one = (path: string) => {
    try {
      return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(path, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  try {
    return readdirSync(`/proc/${pid}/task`).reduce((a, tid) => a + one(`/proc/${pid}/task/${tid}/status`), 0);
  } catch {
    return one(`/proc/${pid}/status`);
  }
}

/** Wake-ups (voluntary context switches, /proc/<pid>/status) of each group of processes so far. */
export function wakeupsOf(pids: Record<string, number[]>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, ps.reduce((a, p) => a + wakeupsOfPid(p), 0)]));
}

/** Live descendants of `pid` (children, their children, ...). */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statOf(Number(name));
    if (!f) continue;
    const ppid = Number(f[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(Number(name));
  }
  const out: number[] = [];
  const todo = [...(children.get(pid) ?? [])];
  while (todo.length) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

/**
 * The processes a CPU-per-call block reads: `pids` (groups of processes, e.g. each app, nats-server,
 * postgres), `trees` (label → a pid whose descendants are counted: descendantsCpuMs, e.g. a runner's
 * sandboxes; approximate, see there) and `reaped` (label → a pid whose ended children are counted,
 * e.g. the bench's own baseline spawns).
 */
export interface ProcGroups {
  pids: Record<string, number[]>;
  trees?: Record<string, number>;
  reaped?: Record<string, number>;
}

/** CPU ms, write syscalls and wake-ups of each group, so far. */
export interface Usage {
  cpu: Record<string, number>;
  writes: Record<string, number>;
  wakeups: Record<string, number>;
  /** CPU ms of each tree by what makes it up (never summed with `cpu`): `<tree>: <command> own|reaped`, `<tree>: reaped by the root`. */
  detail: Record<string, number>;
}

/** A tree's CPU ms by command: each live descendant's own time and what it reaped, and what the root reaped. */
function treeDetail(label: string, pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (k: string, v: number) => (out[`${label}: ${k}`] = (out[`${label}: ${k}`] ?? 0) + v);
  add('reaped by the root', reapedCpuMs(pid));
  for (const p of descendantsOf(pid)) {
    let comm = '?';
    try {
      comm = readFileSync(`/proc/${p}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const f = statOf(p);
    if (!f) continue;
    add(`${comm} own`, (Number(f[11]) + Number(f[12])) * TICK_MS);
    add(`${comm} reaped`, (Number(f[13]) + Number(f[14])) * TICK_MS);
  }
  return out;
}

/** Groups for a stack: each app by name, nats-server, postgres, the runner's sandbox processes (when runner-local runs). */
export function stackGroups(
  apps: Iterable<[string, { proc: { pid?: number } }]>,
  extra: Record<string, number[]> = {},
): ProcGroups {
  const pids: Record<string, number[]> = {};
  let runner: number | undefined;
  for (const [name, app] of apps) {
    if (!app.proc.pid) continue;
    pids[name] = [app.proc.pid];
    if (name === 'runner-local') runner = app.proc.pid;
  }
  pids['nats-server'] = pidsOf('nats-server');
  pids.postgres = pidsOf('postgres');
  Object.assign(pids, extra);
  return { pids, trees: runner ? { [SANDBOX_LABEL]: runner } : {}, reaped: {} };
}

/** Label of the runner's descendants (the sandboxes: bwrap, the zygote, forked runs). */
export const SANDBOX_LABEL = 'sandbox processes (approx.)';

/** Label of the whole machine's CPU (/proc/stat: every process, other users' load included); never summed with the groups. */
export const MACHINE_LABEL = 'whole machine';

/** CPU ms the whole machine spent so far (/proc/stat: user, nice, system, irq, softirq of every core). */
export function machineCpuMs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]!) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Reads every group now (and the whole machine). Postgres and nats-server count every client of theirs on the machine. */
export function usage(g: ProcGroups): Usage {
  const cpu = cpuMs(g.pids);
  cpu[MACHINE_LABEL] = machineCpuMs();
  const writes = writesOf(g.pids);
  const wakeups = wakeupsOf(g.pids);
  const detail: Record<string, number> = {};
  for (const [k, pid] of Object.entries(g.trees ?? {})) {
    cpu[k] = descendantsCpuMs(pid);
    wakeups[k] = descendantsOf(pid).reduce((a, p) => a + wakeupsOfPid(p), 0);
    Object.assign(detail, treeDetail(k, pid));
  }
  for (const [k, pid] of Object.entries(g.reaped ?? {})) cpu[k] = reapedCpuMs(pid);
  return { cpu, writes, wakeups, detail };
}

function addDiff(into: Usage, a: Usage, b: Usage): void {
  for (const f of ['cpu', 'writes', 'wakeups', 'detail'] as const)
    for (const k of Object.keys(b[f])) into[f][k] = (into[f][k] ?? 0) + b[f][k]! - (a[f][k] ?? 0);
}

/**
 * CPU per call of each case from alternating blocks of `block` calls (`n` calls per case in all),
 * every group read around each block: drift on a shared machine hits every case alike, and nothing
 * else (no subscriber, no profiler of the bench's) runs during them.
 */
export async function measureUsageBlocks(
  cases: ReadonlyArray<{
    label: string;
    fn: () => Promise<unknown> /** Awaited at the end of each block, inside the measurement (e.g. until queued work is done). */;
    settle?: () => Promise<void>;
  }>,
  g: ProcGroups,
  n: number,
  block = 100,
): Promise<Array<{ label: string; calls: number; use: Usage; wallMs: number }>> {
  const out = cases.map((c) => ({
    label: c.label,
    calls: 0,
    use: { cpu: {}, writes: {}, wakeups: {}, detail: {} } as Usage,
    wallMs: 0,
  }));
  for (let done = 0; done < n; done += block) {
    const k = Math.min(block, n - done);
    for (const [i, c] of cases.entries()) {
      const a = usage(g);
      const t = performance.now();
      for (let j = 0; j < k; j++) await c.fn();
      await c.settle?.();
      out[i]!.wallMs += performance.now() - t;
      addDiff(out[i]!.use, a, usage(g));
      out[i]!.calls += k;
    }
  }
  return out;
}

/**
 * Lines of a usage block: CPU ms per call of each group (and the total), write syscalls and
 * wake-ups (voluntary context switches) per call. Groups with nothing in this block are left out.
 */
export function usageLines(label: string, use: Usage, calls: number): string[] {
  const per = (r: Record<string, number>, digits: number) =>
    Object.entries(r)
      .filter(([, v]) => v !== 0)
      .map(([k, v]) => `${k} ${(v / calls).toFixed(digits)}`)
      .join(', ');
  const { [MACHINE_LABEL]: machine, ...groups } = use.cpu;
  const total = Object.values(groups).reduce((a, v) => a + v, 0) / calls;
  return [
    `${label} (${calls} calls): CPU ms per call ${total.toFixed(2)} in all = ${per(groups, 2)}; ${MACHINE_LABEL} (/proc/stat, other load included) ${((machine ?? 0) / calls).toFixed(2)}`,
    `  write syscalls per call: ${per(use.writes, 1)}`,
    `  wake-ups (voluntary context switches) per call: ${per(use.wakeups, 1)}`,
    ...(Object.values(use.detail).some((v) => v !== 0)
      ? [
          `  of which (CPU ms per call; a process that ended in between moves its time to its parent's "reaped"): ${per(use.detail, 2)}`,
        ]
      : []),
  ];
}

/** Minimal NATS connection surface the counter needs (@nats-io/transport-node's NatsConnection fits). */
interface Subscribable {
  subscribe(
    subject: string,
    opts: {
      callback: (
        err: Error | null,
        msg: { subject: string; reply?: string; data: Uint8Array; headers?: unknown },
      ) => void;
    },
  ): { unsubscribe(): void };
  flush(): Promise<void>;
}

/** Messages and bytes (payload; headers apart) by subject family. */
export type NatsFamily = 'requests' | 'replies' | 'events' | 'internal';
export interface NatsCounts {
  families: Record<NatsFamily, { msgs: number; bytes: number; headerBytes: number }>;
  subjects: Map<string, { msgs: number; bytes: number }>;
}

/**
 * Counts the NATS traffic of a stack on its own prefix while it runs: a subscriber on `<prefix>.>`
 * and on `_INBOX.>`; an inbox message counts only when it answers a request seen on the prefix (its
 * reply subject), so other users of a shared server are left out. Families: `internal` (subjects
 * with `.internal.`: service-to-service requests and broadcasts), `requests` (other subjects with
 * a reply), `events` (other subjects without one), `replies` (the answers on inboxes).
 * JetStream API traffic ($JS.API.>) is not counted. Run it in its own block: receiving everything
 * costs the bench and nats-server CPU.
 */
export async function countNats(nc: Subscribable, prefix: string): Promise<{ stop: () => Promise<NatsCounts> }> {
  const families = Object.fromEntries(
    (['requests', 'replies', 'events', 'internal'] as const).map((f) => [f, { msgs: 0, bytes: 0, headerBytes: 0 }]),
  ) as NatsCounts['families'];
  const subjects = new Map<string, { msgs: number; bytes: number }>();
  const replies = new Set<string>();
  const headerBytes = (h: unknown) => {
    const enc = (h as { encode?: () => Uint8Array } | undefined)?.encode;
    return enc ? enc.call(h).length : 0;
  };
  const add = (family: NatsFamily, key: string, msg: { data: Uint8Array; headers?: unknown }) => {
    const f = families[family];
    f.msgs++;
    f.bytes += msg.data.length;
    f.headerBytes += headerBytes(msg.headers);
    const s = subjects.get(key) ?? { msgs: 0, bytes: 0 };
    s.msgs++;
    s.bytes += msg.data.length;
    subjects.set(key, s);
  };
  const a = nc.subscribe(`${prefix}.>`, {
    callback: (_e, msg) => {
      if (msg.reply) replies.add(msg.reply);
      const family: NatsFamily = msg.subject.includes('.internal.') ? 'internal' : msg.reply ? 'requests' : 'events';
      add(family, `${family} ${msg.subject.slice(prefix.length + 1)}`, msg);
    },
  });
  const b = nc.subscribe('_INBOX.>', {
    callback: (_e, msg) => {
      if (!replies.delete(msg.subject)) return;
      add('replies', `replies ${msg.subject.split('.').slice(0, 2).join('.')}.*`, msg);
    },
  });
  await nc.flush();
  return {
    stop: async () => {
      await nc.flush();
      await new Promise((r) => setTimeout(r, 200)); // the last replies in flight
      a.unsubscribe();
      b.unsubscribe();
      return { families, subjects };
    },
  };
}

/** Lines of a NATS count: messages and bytes per call by family, then the busiest subjects. */
export function natsLines(label: string, c: NatsCounts, calls: number, top = 12): string[] {
  const fams = Object.entries(c.families);
  const msgs = fams.reduce((a, [, f]) => a + f.msgs, 0);
  const bytes = fams.reduce((a, [, f]) => a + f.bytes + f.headerBytes, 0);
  const lines = [
    `${label} (${calls} calls): NATS ${(msgs / calls).toFixed(2)} messages, ${(bytes / calls).toFixed(0)} bytes per call (payload + headers) = ${fams
      .map(
        ([k, f]) =>
          `${k} ${(f.msgs / calls).toFixed(2)} msgs / ${(f.bytes / calls).toFixed(0)} + ${(f.headerBytes / calls).toFixed(0)} hdr B`,
      )
      .join(', ')}`,
  ];
  const subjects = [...c.subjects.entries()].sort((x, y) => y[1].msgs - x[1].msgs).slice(0, top);
  for (const [s, v] of subjects)
    lines.push(
      `    ${(v.msgs / calls).toFixed(2).padStart(6)} msgs ${(v.bytes / calls).toFixed(0).padStart(7)} B  ${s}`,
    );
  return lines;
}

/** BENCH_CPU_PROF=<dir>: NODE_OPTIONS that make an app write a V8 CPU profile to <dir>/<app>/ when it stops; {} without it. */
export function cpuProfileEnv(app: string): Record<string, string> {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}/${app}` } : {};
}

/**
 * BENCH_CPU_PROF: marks the window the profiles are read over (tools/bench/profile-breakdown.ts):
 * <dir>/window.json with the monotonic clock in µs (the clock of V8's profile timestamps) at the
 * start and end, and the calls made in it.
 */
export async function profiledWindow<T>(label: string, calls: number, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  const now = () => Number(process.hrtime.bigint() / 1000n);
  const startUs = now();
  const r = await fn();
  if (dir) {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/window.json`, JSON.stringify({ label, startUs, endUs: now(), calls }));
  }
  return r;
}
