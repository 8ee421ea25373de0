/**
 * Helpers of the fault suite (test/e2e/faults-*.e2e.ts, `npm run reliability:faults`): how many
 * times a scenario repeats, the report row each one writes (scenario → what the caller saw → what
 * was stored → pass), the process tree of a service (orphans after a SIGKILL), a tool that counts
 * its runs in a host file, and the events of the run's stream.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** FAULT_REPEAT: how many times each scenario runs (1 in `npm test`; `npm run reliability:faults` sets more). */
export function faultRepeat(): number {
  const n = Number(process.env.FAULT_REPEAT ?? 1);
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/** A test's timeout for a scenario that takes up to `ms` once: `ms` per repeat. */
export function perScenario(ms: number): number {
  return ms * faultRepeat();
}

export interface FaultRow {
  scenario: string;
  /** What the caller saw (reply codes, client errors), summarised. */
  saw: string;
  /** What was stored (record states, events, runs), summarised. */
  stored: string;
  pass: boolean;
}

/** Appends a row to FAULT_REPORT (a JSON-lines file the reliability runner prints as a table) when set. */
export function reportFault(row: FaultRow): void {
  const file = process.env.FAULT_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
}

/**
 * Runs one scenario `faultRepeat()` times, reporting a row per attempt; the attempt's own
 * assertions (inside `attempt`) decide pass/fail and the first failure fails the test.
 */
export async function repeatScenario(
  scenario: string,
  attempt: (i: number) => Promise<{ saw: string; stored: string }>,
): Promise<void> {
  for (let i = 0; i < faultRepeat(); i++) {
    try {
      reportFault({ scenario, ...(await attempt(i)), pass: true });
    } catch (e) {
      reportFault({
        scenario,
        saw: '(attempt failed)',
        stored: `FAILED: ${String((e as Error).message)
          .split('\n')[0]!
          .slice(0, 200)}`,
        pass: false,
      });
      throw e;
    }
  }
}

/** What a caller saw, as a short string: an error reply's code, a result's status/code, or a client error's name. */
export function sawOf(r: unknown): string {
  if (r instanceof Error) return `client ${r.name}`;
  const v = r as { error?: { code?: string; retryable?: boolean }; status?: string };
  if (v?.error?.code && v.status)
    return `${v.status}/${v.error.code}${v.error.retryable !== undefined ? ` retryable=${v.error.retryable}` : ''}`;
  if (v?.error?.code) return `error ${v.error.code} retryable=${v.error.retryable}`;
  return v?.status ?? 'ok';
}

/** Tallies strings into `a×2, b×1`. */
export function tally(values: readonly string[]): string {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return [...m].map(([k, n]) => `${k}×${n}`).join(', ') || 'none';
}

export interface ProcInfo {
  pid: number;
  /** Start time in clock ticks since boot (field 22 of /proc/<pid>/stat): tells a reused pid apart. */
  start: string;
}

function statOf(pid: number): { ppid: number; state: string; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]), start: rest[19]! };
  } catch {
    return undefined;
  }
}

/** Every host process below `root` (children, grandchildren, …), seen from the host across namespaces. */
export function descendantsOf(root: number): ProcInfo[] {
  const children = new Map<number, number[]>();
  const starts = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = statOf(Number(entry));
    if (!s) continue;
    starts.set(Number(entry), s.start);
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(entry)]);
  }
  const out: ProcInfo[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push({ pid: c, start: starts.get(c)! });
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** Those of `procs` still alive (same pid and start time, not a zombie). */
export function stillAlive(procs: readonly ProcInfo[]): ProcInfo[] {
  return procs.filter((p) => {
    const s = statOf(p.pid);
    return s !== undefined && s.start === p.start && s.state !== 'Z';
  });
}

/**
 * The cgroups a runner-local process made (`toolplane-<pid>-…`, v1 controller trees or v2), found
 * under /sys/fs/cgroup up to a few levels down: what a killed runner could leave behind.
 */
export function runnerCgroupsOf(pid: number, root = '/sys/fs/cgroup'): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: string[];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.startsWith(`toolplane-${pid}-`)) found.push(join(dir, e));
      else if (depth > 0) walk(join(dir, e), depth - 1);
    }
  };
  walk(root, 4);
  return found;
}

/**
 * A host file a trusted test tool appends a line to per run (runner-local with
 * RUNNER_ISOLATION=unsafe only: the test's own stack): how many times each token's call ran.
 */
export class RunLog {
  readonly dir = mkdtempSync(join(tmpdir(), 'tp-faults-'));
  readonly file = join(this.dir, 'runs.log');

  constructor() {
    chmodSync(this.dir, 0o777);
    writeFileSync(this.file, '');
    chmodSync(this.file, 0o666);
  }

  /** Python body of a tool `(token: str, seconds: float)` that logs its token, sleeps, returns it. */
  get toolBody(): string {
    return `import time\nwith open(${JSON.stringify(this.file)}, "a") as f:\n    f.write(token + "\\n")\ntime.sleep(seconds)\nreturn token`;
  }

  runs(token: string): number {
    if (!existsSync(this.file)) return 0;
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .filter((l) => l === token).length;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The payloads of the run's events on `<prefix>.toolplane.v1.events.<tail>` (e.g. `tool.created`), in stream order. */
export async function eventsOn(nc: NatsConnection, prefix: string, tail: string): Promise<any[]> {
  const jsm = await jetstreamManager(nc);
  const out: any[] = [];
  for (let seq = 1; ; ) {
    const m = await jsm.streams
      .getMessage(`${prefix}_TOOLPLANE_EVENTS`, {
        seq,
        next_by_subj: `${prefix}.toolplane.v1.events.${tail}`,
      } as unknown as { seq: number })
      .catch(() => null);
    if (!m) return out;
    out.push(m.json());
    seq = m.seq + 1;
  }
}
