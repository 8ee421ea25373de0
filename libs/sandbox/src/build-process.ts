import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as fsc, lstatSync, promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ONE_SHOT_FDS } from './bwrap.args';

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

/**
 * Directories built once per key and reused (virtualenvs, node_modules trees): concurrent callers
 * in this process share one build, other processes wait on a lock file (broken once older than
 * the build timeout plus 30 s), a finished build is marked by a ready file, a failed one leaves
 * nothing behind.
 *
 * Build code (setup.py, npm scripts) can write only inside the build's own dir, and only while it
 * runs. The lock and the ready marker live beside that dir, in the root only the runner writes,
 * and are created with O_EXCL | O_NOFOLLOW; once the build is over (every build process is dead:
 * the sandbox's pid namespace is gone) its tree is locked down: owned by the runner, read-only,
 * no set-id bits, links left as links (never followed).
 */
export class BuildOnce {
  builds = 0;
  private readonly building = new Map<string, Promise<string>>();

  constructor(private readonly o: { root: string; timeoutMs: number }) {}

  ensure(dir: string, specifiers: readonly string[], build: (dir: string) => Promise<void>): Promise<string> {
    if (isReady(dir)) return Promise.resolve(dir);
    let p = this.building.get(dir);
    if (!p) {
      p = this.buildLocked(dir, specifiers, build).finally(() => this.building.delete(dir));
      this.building.set(dir, p);
    }
    return p;
  }

  private async buildLocked(dir: string, specifiers: readonly string[], build: (dir: string) => Promise<void>): Promise<string> {
    await fs.mkdir(this.o.root, { recursive: true, mode: 0o755 });
    const lock = `${dir}${LOCK_SUFFIX}`;
    const stale = this.o.timeoutMs + 30_000;
    const deadline = Date.now() + stale;
    for (;;) {
      if (isReady(dir)) return dir;
      try {
        await (await fs.open(lock, fsc.O_CREAT | fsc.O_EXCL | fsc.O_WRONLY | fsc.O_NOFOLLOW, 0o644)).close();
        break;
      } catch {
        const age = Date.now() - (await fs.lstat(lock).then((s) => s.mtimeMs).catch(() => Date.now()));
        if (age > stale || Date.now() > deadline) await fs.rm(lock, { force: true });
        else await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      if (isReady(dir)) return dir;
      await fs.rm(dir, { recursive: true, force: true });
      await build(dir);
      const bytes = await lockDown(dir);
      await writeMarker(dir, { specifiers: [...specifiers], bytes });
      this.builds++;
      return dir;
    } catch (e) {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
      throw e;
    } finally {
      await fs.rm(lock, { force: true });
    }
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
 * its output for the error message.
 */
export function runBuild(
  cmd: string,
  args: string[],
  ids: { uid?: number; gid?: number },
  timeoutMs: number,
  attachNetwork?: (pid: number) => Promise<{ stop(): void }>,
): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    let output = '';
    let timedOut = false;
    let slirp: { stop(): void } | undefined;
    const stdio = attachNetwork ? (['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'] as const) : (['ignore', 'pipe', 'pipe'] as const);
    const p = spawn(cmd, args, { stdio: [...stdio], env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' }, detached: true, ...(ids.uid !== undefined ? { uid: ids.uid, gid: ids.gid } : {}) });
    const keep = (d: Buffer): void => void (output = (output + d.toString()).slice(-64_000));
    p.stdout!.on('data', keep);
    p.stderr!.on('data', keep);
    if (attachNetwork) {
      // bwrap reports the sandbox pid; confine.py says when its network namespace exists; the
      // runner attaches slirp4netns and lets it go on.
      const stdio = p.stdio as unknown as Array<Readable | Writable>;
      const [info, made, go] = [stdio[ONE_SHOT_FDS.info], stdio[ONE_SHOT_FDS.made], stdio[ONE_SHOT_FDS.go]] as [Readable, Readable, Writable];
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
