import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmdirSync,
  writeFileSync,
  mkdirSync,
  constants as fsc,
} from 'node:fs';
import * as path from 'node:path';

/**
 * Per-call resource limits with cgroups (part of the isolation policy). Each slot gets a cgroup
 * of its own; the slot process moves itself into it at start-up (it writes "0" to a `cgroup.procs`
 * file the runner opened for it), so every process of every call of that slot is born there — no
 * migration on the call path. Before each call the runner sets the call's limits on it (written
 * only when they change): `memory.max` (v2) / `memory.limit_in_bytes` (v1) = the call's memory
 * plus the slot's own baseline, `pids.max` = the call's processes plus the slot, and an equal CPU
 * weight per slot (a call with 60 processes gets no more CPU than a call with one).
 *
 * Both hierarchies: cgroup v2 (a delegated subtree: the runner's own cgroup, writable by it) and
 * cgroup v1 (separate memory, pids and cpu hierarchies, as root). Without either, `mode` is
 * 'none' with the reason, and the calls keep the per-process rlimits only.
 */
export type CgroupMode = 'v2' | 'v1' | 'none';

export interface CgroupOptions {
  /** `auto`: use cgroups when delegated, else fall back; `off`: never; `required`: refuse to start without. */
  mode?: 'auto' | 'off' | 'required';
  /** For tests: the cgroup file system root and this process's /proc/self/cgroup and mountinfo. */
  root?: string;
}

export class CgroupUnavailableError extends Error {}

interface Hierarchy {
  /** Controller(s) it serves: 'unified' for v2, else 'memory' | 'pids' | 'cpu'. */
  kind: 'unified' | 'memory' | 'pids' | 'cpu';
  /** Directory holding the runner's slot groups. */
  base: string;
  /**
   * Slot groups sit directly in the runner's own group (v2; v1 cpu), named `<id>-slot-<n>`, rather
   * than in a `<id>` group of their own. For CPU this is the point: each call then weighs what one
   * process of the machine weighs, whatever its number of processes, instead of all calls
   * together weighing one.
   */
  flat: boolean;
}

const CONTROLLERS_V1 = ['memory', 'pids', 'cpu'] as const;
/** Several drivers may live in one process (tests): each names its groups apart. */
let managers = 0;

export class CgroupManager {
  private seq = 0;
  private readonly groups = new Set<SlotCgroup>();

  constructor(
    readonly mode: CgroupMode,
    readonly reason: string,
    private readonly hierarchies: Hierarchy[],
    /** `toolplane-<pid>-<n>`: this manager's groups (v1: its base dir; v2: the prefix of its slot groups). */
    readonly id = '',
  ) {}

  /** Finds a usable hierarchy (v2 first, then v1) and prepares the runner's part of it. */
  static detect(opts: CgroupOptions = {}): CgroupManager {
    const mode = opts.mode ?? 'auto';
    if (mode === 'off') return new CgroupManager('none', 'cgroups are turned off (RUNNER_CGROUPS=off)', []);
    const root = opts.root ?? '/sys/fs/cgroup';
    const reasons: string[] = [];
    const id = `toolplane-${process.pid}-${++managers}`;
    for (const attempt of [tryV2, tryV1]) {
      try {
        const found = attempt(root, id);
        if (found) return found;
      } catch (e) {
        reasons.push((e as Error).message);
      }
    }
    const reason = reasons.join('; ') || `no cgroup hierarchy with the memory and pids controllers under ${root}`;
    if (mode === 'required')
      throw new CgroupUnavailableError(
        `cgroups are required (RUNNER_CGROUPS=required) but not delegated to this runner: ${reason}`,
      );
    return new CgroupManager('none', reason, []);
  }

  /** A cgroup for one slot (undefined without cgroups). */
  slotGroup(): SlotCgroup | undefined {
    if (this.mode === 'none') return undefined;
    const n = ++this.seq;
    const dirs = this.hierarchies.map((h) => ({
      kind: h.kind,
      dir: path.join(h.base, h.flat ? `${this.id}-slot-${n}` : `slot-${n}`),
    }));
    for (const d of dirs) {
      rmdirQuiet(d.dir); // a leftover of an earlier slot of the same name (empty by now)
      mkdirSync(d.dir);
    }
    const group = new SlotCgroup(this.mode, dirs);
    this.groups.add(group);
    return group;
  }

  /** Removes the runner's groups (each slot's first; they are empty once their sandboxes are gone). */
  async close(): Promise<void> {
    await Promise.all([...this.groups].map((g) => g.remove()));
    this.groups.clear();
    for (const h of this.hierarchies) {
      if (h.flat) {
        for (const e of safeReaddir(h.base)) if (e.startsWith(`${this.id}-slot-`)) rmdirQuiet(path.join(h.base, e));
      } else {
        for (const e of safeReaddir(h.base)) if (e.startsWith('slot-')) rmdirQuiet(path.join(h.base, e));
        rmdirQuiet(h.base);
      }
    }
  }
}

export class SlotCgroup {
  private memory?: number;
  private pids?: number;
  private oomSeen = 0;
  private oomFd?: number;
  private readonly oomBuf = Buffer.alloc(512);
  /** Bytes the slot itself holds (its interpreter and waiting child), added to each call's memory. */
  baseline = 0;

  constructor(
    readonly mode: 'v1' | 'v2',
    private readonly dirs: Array<{ kind: Hierarchy['kind']; dir: string }>,
  ) {
    for (const d of dirs) {
      if (d.kind === 'unified') writeQuiet(path.join(d.dir, 'cpu.weight'), '100');
      if (d.kind === 'cpu') writeQuiet(path.join(d.dir, 'cpu.shares'), '1024');
    }
  }

  /** `cgroup.procs` of each hierarchy, opened for writing; the caller passes them to the slot and closes them. */
  openProcs(): number[] {
    const fds: number[] = [];
    try {
      for (const d of this.dirs) fds.push(openSync(path.join(d.dir, 'cgroup.procs'), fsc.O_WRONLY));
    } catch (e) {
      closeFds(fds);
      throw e;
    }
    return fds;
  }

  /** Anonymous memory the group holds now (the slot and its waiting child, before any call). */
  residentBytes(): number {
    const stat = readQuiet(path.join(this.dirOf('memory'), 'memory.stat')) ?? '';
    return Number(new RegExp(`^${this.mode === 'v2' ? 'anon' : 'rss'} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0);
  }

  /** Sets the call's limits (no write when they are the ones already set). */
  apply(limits: { memoryBytes: number; processes: number }): void {
    const memory = limits.memoryBytes + this.baseline;
    if (memory !== this.memory) {
      if (this.mode === 'v2') {
        writeFileSync(path.join(this.dirOf('memory'), 'memory.max'), String(memory));
        writeQuiet(path.join(this.dirOf('memory'), 'memory.swap.max'), '0');
      } else {
        const dir = this.dirOf('memory');
        const memsw = path.join(dir, 'memory.memsw.limit_in_bytes');
        // memsw >= limit at every moment: raise memsw first, lower the limit first.
        if (this.memory !== undefined && memory > this.memory) writeQuiet(memsw, String(memory));
        writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(memory));
        writeQuiet(memsw, String(memory));
      }
      this.memory = memory;
    }
    if (limits.processes !== this.pids) {
      // The slot process is one of them.
      writeFileSync(path.join(this.dirOf('pids'), 'pids.max'), String(limits.processes + 1));
      this.pids = limits.processes;
    }
  }

  /** Out-of-memory kills in the group since the last call of this method (read after every call). */
  takeOomKills(): number {
    const total = Number(/^oom_kill (\d+)$/m.exec(this.readOomEvents() ?? '')?.[1] ?? 0);
    const fresh = total - this.oomSeen;
    this.oomSeen = total;
    return fresh;
  }

  /**
   * memory.events (v2) or memory.oom_control (v1), re-read from offset 0 of a descriptor kept open
   * (a kernel seq file regenerates on each read from 0): no open and close per call.
   */
  private readOomEvents(): string | undefined {
    try {
      this.oomFd ??= openSync(
        path.join(this.dirOf('memory'), this.mode === 'v2' ? 'memory.events' : 'memory.oom_control'),
        fsc.O_RDONLY,
      );
      return this.oomBuf.toString('latin1', 0, readSync(this.oomFd, this.oomBuf, 0, this.oomBuf.length, 0));
    } catch {
      this.closeOomFd();
      return undefined;
    }
  }

  private closeOomFd(): void {
    if (this.oomFd === undefined) return;
    closeFds([this.oomFd]);
    this.oomFd = undefined;
  }

  /** Removes the group once its processes are gone (retried briefly: reaping takes a moment). */
  async remove(): Promise<void> {
    this.closeOomFd();
    for (let i = 0; i < 50; i++) {
      const left = this.dirs.filter((d) => existsSync(d.dir) && !rmdirQuiet(d.dir));
      if (left.length === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private dirOf(kind: 'memory' | 'pids'): string {
    return (this.dirs.find((d) => d.kind === 'unified') ?? this.dirs.find((d) => d.kind === kind))!.dir;
  }
}

/**
 * cgroup v2: the runner's own cgroup must be delegated to it (writable). Its processes move to a
 * leaf (`runner`), the memory, pids and cpu controllers are enabled for its children, and slots
 * get sibling groups.
 */
function tryV2(root: string, id: string): CgroupManager | undefined {
  if (!existsSync(path.join(root, 'cgroup.controllers'))) return undefined; // not a unified hierarchy at the root
  const own = /^0::(\/.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
  if (own === undefined) return undefined;
  const base = path.join(root, own);
  const available = (readQuiet(path.join(base, 'cgroup.controllers')) ?? '').split(/\s+/);
  const missing = ['memory', 'pids'].filter((c) => !available.includes(c));
  if (missing.length)
    throw new Error(
      `cgroup v2: the ${missing.join(' and ')} controller(s) are not available in ${base} (not delegated)`,
    );
  try {
    const leaf = path.join(base, 'runner');
    if (!existsSync(leaf)) mkdirSync(leaf);
    // Every process of our cgroup (ours, and e.g. the container's init) moves to the leaf: a cgroup
    // with processes cannot enable controllers for its children.
    for (const pid of (readQuiet(path.join(base, 'cgroup.procs')) ?? '').split('\n').filter(Boolean))
      writeQuiet(path.join(leaf, 'cgroup.procs'), pid);
    const wanted = ['memory', 'pids', ...(available.includes('cpu') ? ['cpu'] : [])];
    writeFileSync(path.join(base, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
  } catch (e) {
    throw new Error(
      `cgroup v2: ${base} is not delegated to this runner (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  cleanStale(base); // groups of runners that are gone
  return new CgroupManager('v2', `cgroup v2 at ${base}`, [{ kind: 'unified', base, flat: true }], id);
}

/** cgroup v1: memory, pids and cpu hierarchies, each under the runner's own group, writable (root). */
function tryV1(root: string, id: string): CgroupManager | undefined {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, p] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    for (const c of (controllers ?? '').split(',')) if (c) own.set(c, p!);
  }
  const hierarchies: Hierarchy[] = [];
  for (const c of CONTROLLERS_V1) {
    const mount = [path.join(root, c), path.join(root, c === 'cpu' ? 'cpu,cpuacct' : c)].find((d) =>
      existsSync(path.join(d, 'cgroup.procs')),
    );
    if (!mount) {
      if (c === 'cpu') continue; // optional: weights only
      return undefined;
    }
    const flat = c === 'cpu';
    const parent = path.join(mount, own.get(c) ?? '/');
    const base = flat ? parent : path.join(parent, id);
    try {
      cleanStale(parent);
      if (!existsSync(base)) mkdirSync(base);
    } catch (e) {
      throw new Error(
        `cgroup v1: cannot create ${base} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; the runner must be root, or run with cgroup v2 delegation)`,
      );
    }
    hierarchies.push({ kind: c, base, flat });
  }
  return new CgroupManager(
    'v1',
    `cgroup v1 (${hierarchies.map((h) => (h.flat ? path.join(h.base, `${id}-slot-*`) : h.base)).join(', ')})`,
    hierarchies,
    id,
  );
}

/** Groups `toolplane-<pid>-…` of runners that are gone (empty once their sandboxes are). */
function cleanStale(parent: string): void {
  for (const e of safeReaddir(parent)) {
    const pid = /^toolplane-(\d+)-/.exec(e)?.[1];
    if (!pid || Number(pid) === process.pid || existsSync(`/proc/${pid}`)) continue;
    const dir = path.join(parent, e);
    for (const s of safeReaddir(dir)) if (s.startsWith('slot-')) rmdirQuiet(path.join(dir, s));
    rmdirQuiet(dir);
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function rmdirQuiet(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function readQuiet(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function writeQuiet(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // optional knob (swap accounting, cpu) absent on this kernel
  }
}

export function closeFds(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}
