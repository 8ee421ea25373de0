import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsc, lstatSync, promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ONE_SHOT_FDS } from './bwrap.args';
import type { PrepareOptions } from './sandbox.types';

/** A finished build `<root>/<name>` is marked by `<root>/<name>.ready` (never inside the build's own dir). */
export const READY_SUFFIX = '.ready';
export const LOCK_SUFFIX = '.lock';

/** What a ready marker holds. */
export interface ReadyMarker {
  specifiers: string[];
  /** Bytes the build occupies on disk. */
  bytes: number;
}

/** Is `dir` a finished build (its marker a regular file, not a link planted by anyone)? */
export function isReady(dir: string): boolean {
  try {
    return lstatSync(`${dir}${READY_SUFFIX}`).isFile();
  } catch {
    return false;
  }
}

/** Where a build sees the CA bundle of BuildSettings.caBundle. */
export const BUILD_CA_MOUNT = '/opt/toolplane-build/ca.pem';

/** Package-index settings every build gets, pip's and npm's alike (the runner's config). */
export interface BuildSettings {
  /**
   * Host path of the CA bundle builds trust (the system's CAs and the operator's extra one, see
   * `writeCaBundle`): bound read-only at BUILD_CA_MOUNT, pip's `--cert`, npm's `cafile`.
   */
  caBundle?: string;
  /**
   * HTTP(S) proxy of builds (pip `--proxy`, npm `proxy` / `https-proxy`); a build that needs an
   * index then reaches this proxy only. Never given to tool calls.
   */
  proxy?: string;
}

/** The addresses a build's network must reach: none for local sources, else the proxy when there is one, else the indexes. */
export function buildUrls(indexUrls: readonly string[], s: BuildSettings): string[] {
  if (indexUrls.length === 0) return [];
  return s.proxy ? [s.proxy] : [...indexUrls];
}

/** bwrap binds a build needs for its settings (the CA bundle). */
export function buildSettingsBinds(s: BuildSettings): string[] {
  return s.caBundle ? ['--ro-bind', s.caBundle, BUILD_CA_MOUNT] : [];
}

const SYSTEM_CA_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
];

/**
 * pip's `--cert` and npm's `cafile` replace the CAs they trust: an extra CA (a corporate proxy's)
 * is added to the system's bundle instead. Writes `<workRoot>/build-ca-<digest>.pem` (0644: the
 * build user reads it) and returns its path. Throws when `extraCaFile` holds no PEM certificate.
 */
export async function writeCaBundle(workRoot: string, extraCaFile: string): Promise<string> {
  const extra = await fs.readFile(extraCaFile, 'utf8');
  if (!extra.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`${extraCaFile} holds no PEM certificate`);
  let system = '';
  for (const f of SYSTEM_CA_BUNDLES) {
    system = await fs.readFile(f, 'utf8').catch(() => '');
    if (system) break;
  }
  const body = `${system.trimEnd()}${system ? '\n' : ''}${extra.trimEnd()}\n`;
  const file = path.join(workRoot, `build-ca-${createHash('sha256').update(body).digest('hex').slice(0, 16)}.pem`);
  await fs.mkdir(workRoot, { recursive: true, mode: 0o755 });
  const temp = `${file}.${randomBytes(6).toString('hex')}`;
  await fs.writeFile(temp, body, { mode: 0o644 });
  await fs.rename(temp, file);
  return file;
}

/** What is known of one environment's build, in this runner and on the disk it shares. */
export interface BuildState {
  /** none: never built here nor marked ready; building (here, or another runner holds the lock); ready; failed (the last build here). */
  status: 'none' | 'building' | 'ready' | 'failed';
  /** When the state began (epoch ms), when known. */
  since?: number;
  /** What the build is doing, when its builder says. */
  progress?: string;
  /** Why the last build failed (status failed). */
  error?: Error;
}

/** One build of a dir; `progress` tells what it is doing (kept as the state's progress). */
export type BuildFn = (dir: string, progress: (text: string) => void) => Promise<void>;

/** Failures (and ready times) remembered, per dir, at most: the oldest is forgotten first. */
const MAX_REMEMBERED = 1024;
const MAX_PROGRESS = 300;

interface Running {
  promise: Promise<string>;
  since: number;
  progress?: string;
}

/**
 * Directories built once per key and reused (virtualenvs, node_modules trees): concurrent callers
 * in this process share one build, other processes wait on a lock file (broken once older than
 * the build timeout plus 30 s), a finished build is marked by a ready file, a failed one leaves
 * nothing behind but its error (the state `failed`, until the next build of that dir).
 *
 * Build code (setup.py, npm scripts) can write only inside the build's own dir, and only while it
 * runs. The lock and the ready marker live beside that dir, in the root only the runner writes,
 * and are created with O_EXCL | O_NOFOLLOW; once the build is over (every build process is dead:
 * the sandbox's pid namespace is gone) its tree is locked down: owned by the runner, read-only,
 * no set-id bits, links left as links (never followed).
 */
export class BuildOnce {
  /** Builds finished (ready), and failed, in this process. */
  builds = 0;
  failures = 0;
  private readonly running = new Map<string, Running>();
  private readonly failed = new Map<string, { error: Error; at: number }>();
  private readonly readyAt = new Map<string, number>();

  constructor(private readonly o: { root: string; timeoutMs: number }) {}

  /** Builds running (or waiting for another runner's) now. */
  get inProgress(): number {
    return this.running.size;
  }

  state(dir: string): BuildState {
    const run = this.running.get(dir);
    if (run) return { status: 'building', since: run.since, ...(run.progress ? { progress: run.progress } : {}) };
    const marker = readyMarkerTime(dir);
    if (marker !== undefined) return { status: 'ready', since: this.readyAt.get(dir) ?? (marker || undefined) };
    // Another runner sharing the work root is building it.
    const lock = lockTime(dir);
    if (lock !== undefined) return { status: 'building', since: lock };
    const f = this.failed.get(dir);
    if (f) return { status: 'failed', since: f.at, error: f.error };
    return { status: 'none' };
  }

  /** Resolves with `dir` once it is built (starting the build, or joining the one running); rejects with the build's error. */
  ensure(dir: string, specifiers: readonly string[], build: BuildFn): Promise<string> {
    if (isReady(dir)) return Promise.resolve(dir);
    let run = this.running.get(dir);
    if (!run) {
      const r: Running = { since: Date.now(), promise: undefined as unknown as Promise<string> };
      const progress = (text: string) => {
        const t = text.trim();
        if (t) r.progress = t.length > MAX_PROGRESS ? `${t.slice(0, MAX_PROGRESS - 1)}…` : t;
      };
      r.promise = this.buildLocked(dir, specifiers, (d) => build(d, progress)).finally(() => this.running.delete(dir));
      this.running.set(dir, (run = r));
    }
    return run.promise;
  }

  /**
   * Starts the build of `dir` in the background unless it is ready, running, or failed less than
   * `retryFailedAfterMs` ago; waits at most `waitMs` (or until `signal`) for it to end; answers the
   * state then. Never rejects for the build's sake: a failure is the state `failed`.
   */
  async prepare(
    dir: string,
    specifiers: readonly string[],
    build: BuildFn,
    o: PrepareOptions = {},
  ): Promise<BuildState> {
    if (isReady(dir)) return this.state(dir);
    const f = this.failed.get(dir);
    if (!this.running.has(dir) && f && Date.now() - f.at < (o.retryFailedAfterMs ?? 0)) return this.state(dir);
    const p = this.ensure(dir, specifiers, build);
    p.catch(() => undefined); // the failure is kept as the state
    if ((o.waitMs ?? 0) > 0) await settledWithin(p, o.waitMs!, o.signal);
    return this.state(dir);
  }

  private async buildLocked(
    dir: string,
    specifiers: readonly string[],
    build: (dir: string) => Promise<void>,
  ): Promise<string> {
    try {
      await this.buildUnderLock(dir, specifiers, build);
      this.failed.delete(dir);
      return dir;
    } catch (e) {
      this.failures++;
      this.failed.delete(dir);
      if (this.failed.size >= MAX_REMEMBERED) this.failed.delete(this.failed.keys().next().value!);
      this.failed.set(dir, { error: e instanceof Error ? e : new Error(String(e)), at: Date.now() });
      throw e;
    }
  }

  private async buildUnderLock(
    dir: string,
    specifiers: readonly string[],
    build: (dir: string) => Promise<void>,
  ): Promise<void> {
    await fs.mkdir(this.o.root, { recursive: true, mode: 0o755 });
    const lock = `${dir}${LOCK_SUFFIX}`;
    const stale = this.o.timeoutMs + 30_000;
    const deadline = Date.now() + stale;
    for (;;) {
      if (isReady(dir)) return;
      try {
        await (await fs.open(lock, fsc.O_CREAT | fsc.O_EXCL | fsc.O_WRONLY | fsc.O_NOFOLLOW, 0o644)).close();
        break;
      } catch {
        const age =
          Date.now() -
          (await fs
            .lstat(lock)
            .then((s) => s.mtimeMs)
            .catch(() => Date.now()));
        if (age > stale || Date.now() > deadline) await fs.rm(lock, { force: true });
        else await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      if (isReady(dir)) return;
      await fs.rm(dir, { recursive: true, force: true });
      await build(dir);
      const bytes = await lockDown(dir);
      await writeMarker(dir, { specifiers: [...specifiers], bytes });
      this.builds++;
      if (this.readyAt.size >= MAX_REMEMBERED) this.readyAt.delete(this.readyAt.keys().next().value!);
      this.readyAt.set(dir, Date.now());
    } catch (e) {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
      throw e;
    } finally {
      await fs.rm(lock, { force: true });
    }
  }
}

/** Resolves when `p` settles, `ms` pass, or `signal` aborts, whichever comes first. */
function settledWithin(p: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    p.then(done, done);
  });
}

/** The ready marker's birth time (0 when the file system does not say), or undefined without a marker. */
function readyMarkerTime(dir: string): number | undefined {
  try {
    const st = lstatSync(`${dir}${READY_SUFFIX}`);
    return st.isFile() ? Math.round(st.birthtimeMs) : undefined;
  } catch {
    return undefined;
  }
}

function lockTime(dir: string): number | undefined {
  try {
    return Math.round(lstatSync(`${dir}${LOCK_SUFFIX}`).mtimeMs);
  } catch {
    return undefined;
  }
}

/** Writes `<dir>.ready` atomically: a fresh O_EXCL | O_NOFOLLOW file renamed over the name. */
async function writeMarker(dir: string, marker: ReadyMarker): Promise<void> {
  const temp = `${dir}${READY_SUFFIX}.${randomBytes(6).toString('hex')}`;
  const handle = await fs.open(temp, fsc.O_CREAT | fsc.O_EXCL | fsc.O_WRONLY | fsc.O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(`${JSON.stringify(marker)}\n`);
  } finally {
    await handle.close();
  }
  await fs.rename(temp, `${dir}${READY_SUFFIX}`);
}

/**
 * Makes a finished build's tree read-only and owned by this process (root: root), never following
 * a link: directories 0555, files 0444 or 0555 (executable), no set-id bits. Returns its size.
 */
export async function lockDown(dir: string): Promise<number> {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  let bytes = 0;
  const visit = async (p: string): Promise<void> => {
    const st = await fs.lstat(p);
    bytes += st.blocks * 512 || st.size;
    if (st.uid !== uid || st.gid !== gid) await fs.lchown(p, uid, gid);
    if (st.isSymbolicLink()) return;
    if (st.isDirectory()) {
      for (const e of await fs.readdir(p)) await visit(path.join(p, e));
      await fs.chmod(p, 0o555);
    } else {
      await fs.chmod(p, st.mode & 0o100 ? 0o555 : 0o444);
    }
  };
  await visit(dir);
  return bytes;
}

/** Removes a build's tree even though it is read-only (its directories are made writable first). */
export async function removeTree(dir: string): Promise<void> {
  const unlock = async (p: string): Promise<void> => {
    const st = await fs.lstat(p).catch(() => null);
    if (!st?.isDirectory()) return;
    await fs.chmod(p, 0o700);
    for (const e of await fs.readdir(p)) await unlock(path.join(p, e));
  };
  await unlock(dir);
  await fs.rm(dir, { recursive: true, force: true });
}

/**
 * Runs one build command (pip or npm inside a one-shot bubblewrap sandbox) with a minimal env,
 * as `ids` when given, in its own process group killed at `timeoutMs`; keeps the last 64 kB of
 * its output for the error message, and hands each non-empty output line to `onLine`.
 */
export function runBuild(
  cmd: string,
  args: string[],
  ids: { uid?: number; gid?: number },
  timeoutMs: number,
  more: { attachNetwork?: (pid: number) => Promise<{ stop(): void }>; onLine?: (line: string) => void } = {},
): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  const { attachNetwork, onLine } = more;
  return new Promise((resolve) => {
    let output = '';
    let timedOut = false;
    let slirp: { stop(): void } | undefined;
    let partial = '';
    const stdio = attachNetwork
      ? (['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'] as const)
      : (['ignore', 'pipe', 'pipe'] as const);
    const p = spawn(cmd, args, {
      stdio: [...stdio],
      env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
      detached: true,
      ...(ids.uid !== undefined ? { uid: ids.uid, gid: ids.gid } : {}),
    });
    const keep = (d: Buffer): void => {
      const text = d.toString();
      output = (output + text).slice(-64_000);
      if (!onLine) return;
      const lines = (partial + text).split(/\r?\n|\r/);
      partial = lines.pop()!.slice(-4000);
      for (const l of lines) if (l.trim()) onLine(l.trim());
    };
    p.stdout!.on('data', keep);
    p.stderr!.on('data', keep);
    if (attachNetwork) {
      // bwrap reports the sandbox pid; confine.py says when its network namespace exists; the
      // runner attaches slirp4netns and lets it go on.
      const stdio = p.stdio as unknown as Array<Readable | Writable>;
      const [info, made, go] = [stdio[ONE_SHOT_FDS.info], stdio[ONE_SHOT_FDS.made], stdio[ONE_SHOT_FDS.go]] as [
        Readable,
        Readable,
        Writable,
      ];
      for (const s of [info, made, go]) s.on('error', () => undefined);
      let text = '';
      let pid: number | undefined;
      info.on('data', (d: Buffer) => {
        text += d.toString();
        pid ??= Number(/"child-pid"\s*:\s*(\d+)/.exec(text)?.[1]) || undefined;
      });
      made.once('data', () => {
        void (async () => {
          for (let i = 0; pid === undefined && i < 200; i++) await new Promise((r) => setTimeout(r, 5));
          if (pid === undefined) throw new Error('bwrap did not report the sandbox pid');
          // bwrap's pid is the sandbox's init; the namespace was made by its child (confine.py).
          const child = Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0]);
          if (!child) throw new Error('the build process is gone');
          slirp = await attachNetwork(child);
          go.end('g');
        })().catch((e: Error) => {
          keep(Buffer.from(`toolplane: the build's network could not be attached: ${e.message}\n`));
          go.destroy();
        });
      });
    }
    const t = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-p.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }, timeoutMs);
    p.once('error', (e) => {
      clearTimeout(t);
      slirp?.stop();
      resolve({ code: -1, output: e.message, timedOut });
    });
    p.once('close', (code) => {
      clearTimeout(t);
      slirp?.stop();
      resolve({ code, output, timedOut });
    });
  });
}
