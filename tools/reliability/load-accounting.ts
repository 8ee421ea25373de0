/**
 * The pure parts of `npm run reliability:load` (load.ts), unit-tested in load-accounting.spec.ts:
 * nonce accounting (lost / duplicated / crossed calls), the mixed profile's operation for each
 * index, latency summaries, and the memory readings and leak bound.
 */
import { summarize } from '../bench/stats';

/** Ways a call can end that are not a reply of the service (no typed error to count). */
export const NO_REPLY = 'NO_REPLY (client timeout)';
export const NO_RESPONDERS = 'NO_RESPONDERS';

export interface LedgerReport {
  sent: number;
  /** Calls whose reply carried their own nonce, once. */
  echoed: number;
  /** Calls answered with a typed error (a code the service chose). */
  failed: number;
  /** Calls with neither their nonce back nor a typed error: no reply, or a success that lost the nonce. */
  lost: number;
  /** Nonces that came back more than once, or in the reply of another call. */
  duplicated: number;
  /** Replies carrying a nonce this run never sent. */
  foreign: number;
}

/**
 * Every call sends a nonce of its own which the tool echoes; the ledger proves each came back
 * exactly once, to its own caller. A nonce in another call's reply counts as duplicated (a crossed
 * reply), one never sent as foreign.
 */
export class NonceLedger {
  private readonly sent = new Set<string>();
  private readonly seen = new Map<string, number>();
  private readonly own = new Set<string>();
  private readonly typed = new Set<string>();
  private crossed = 0;
  private foreign = 0;

  send(nonce: string): void {
    if (this.sent.has(nonce)) throw new Error(`nonce ${nonce} sent twice: the driver must make each one unique`);
    this.sent.add(nonce);
  }

  /** The call that sent `nonce` was answered with `got` (what the tool echoed, if anything). */
  echo(nonce: string, got: unknown): void {
    if (typeof got !== 'string' || !this.sent.has(got)) {
      if (typeof got === 'string' && got) this.foreign++;
      return;
    }
    this.seen.set(got, (this.seen.get(got) ?? 0) + 1);
    if (got === nonce) this.own.add(nonce);
    else this.crossed++;
  }

  /** The call that sent `nonce` ended with a typed error from a service. */
  fail(nonce: string): void {
    this.typed.add(nonce);
  }

  report(): LedgerReport {
    let lost = 0;
    for (const n of this.sent) if (!this.own.has(n) && !this.typed.has(n)) lost++;
    let repeats = 0;
    for (const count of this.seen.values()) repeats += Math.max(0, count - 1);
    return {
      sent: this.sent.size,
      echoed: this.own.size,
      failed: this.typed.size,
      lost,
      duplicated: repeats + this.crossed,
      foreign: this.foreign,
    };
  }
}

export type MixedOp = 'read' | 'upsert' | 'mcp' | 'execute';

/** The mixed profile, exact over every 20 operations: 4 registry reads (20 %), 1 upsert (5 %), 1 MCP call (5 %), 14 executions. */
export function mixedOp(index: number): MixedOp {
  const k = index % 20;
  if (k < 4) return 'read';
  if (k === 4) return 'upsert';
  if (k === 5) return 'mcp';
  return 'execute';
}

export interface LatencySummary {
  n: number;
  p50: number;
  p99: number;
  max: number;
  perSecond: number;
}

export function latencySummary(samplesMs: readonly number[], wallMs: number): LatencySummary {
  if (!samplesMs.length) return { n: 0, p50: 0, p99: 0, max: 0, perSecond: 0 };
  const s = summarize([...samplesMs], wallMs);
  return { n: s.n, p50: s.p50, p99: s.p99, max: samplesMs.reduce((a, b) => Math.max(a, b), 0), perSecond: s.perSecond };
}

/** Counts by key (error codes), printed largest first. */
export class Tally {
  private readonly counts = new Map<string, number>();

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  get total(): number {
    let t = 0;
    for (const n of this.counts.values()) t += n;
    return t;
  }

  entries(): Array<[string, number]> {
    return [...this.counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  }

  toString(): string {
    return (
      this.entries()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    );
  }
}

/** VmRSS of a /proc/<pid>/status text, in MiB; NaN when absent (a zombie, or not Linux). */
export function rssMiBOf(status: string): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
  return kb === undefined ? Number.NaN : Number(kb) / 1024;
}

/** The parent pid in a /proc/<pid>/stat text (the command may hold spaces and parentheses). */
export function ppidOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

export interface LeakRow {
  service: string;
  /** RSS (MiB) at the start of the run, after the warm-up, after the first round and after the last. */
  start: number;
  warm: number;
  first: number;
  last: number;
  /** last - first: what a second identical round added. */
  growth: number;
  pass: boolean;
}

/**
 * The leak check: after a warm-up, the same load runs `rounds` times; a service passes when its
 * RSS after the last round is at most `boundMiB` above its RSS after the first (caches, pools and
 * the JIT fill up in the first round; a leak keeps growing in the next). A process that is gone
 * (NaN) fails.
 */
export function leakRows(
  samples: ReadonlyArray<{ service: string; rss: readonly number[] }>,
  boundMiB: number,
): LeakRow[] {
  return samples.map(({ service, rss }) => {
    const [start = Number.NaN, warm = Number.NaN, first = Number.NaN] = rss;
    const last = rss.at(-1) ?? Number.NaN;
    const growth = last - first;
    return { service, start, warm, first, last, growth, pass: Number.isFinite(growth) && growth <= boundMiB };
  });
}
