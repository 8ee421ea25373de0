import { spawn } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';

const READY = '.toolplane-ready';

/**
 * Directories built once per key and reused (virtualenvs, node_modules trees): concurrent callers
 * in this process share one build, other processes wait on a lock file (broken once older than
 * the build timeout plus 30 s), a finished build is marked by a ready file, a failed one leaves
 * nothing behind.
 */
export class BuildOnce {
  builds = 0;
  private readonly building = new Map<string, Promise<string>>();

  constructor(private readonly o: { root: string; timeoutMs: number }) {}

  ensure(dir: string, specifiers: readonly string[], build: (dir: string) => Promise<void>): Promise<string> {
    if (existsSync(path.join(dir, READY))) return Promise.resolve(dir);
    let p = this.building.get(dir);
    if (!p) {
      p = this.buildLocked(dir, specifiers, build).finally(() => this.building.delete(dir));
      this.building.set(dir, p);
    }
    return p;
  }

  private async buildLocked(dir: string, specifiers: readonly string[], build: (dir: string) => Promise<void>): Promise<string> {
    await fs.mkdir(this.o.root, { recursive: true, mode: 0o755 });
    const lock = `${dir}.lock`;
    const stale = this.o.timeoutMs + 30_000;
    const deadline = Date.now() + stale;
    for (;;) {
      if (existsSync(path.join(dir, READY))) return dir;
      try {
        await (await fs.open(lock, 'wx')).close();
        break;
      } catch {
        const age = Date.now() - (await fs.stat(lock).then((s) => s.mtimeMs).catch(() => Date.now()));
        if (age > stale || Date.now() > deadline) await fs.rm(lock, { force: true });
        else await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      if (existsSync(path.join(dir, READY))) return dir;
      await fs.rm(dir, { recursive: true, force: true });
      await build(dir);
      await fs.writeFile(path.join(dir, READY), `${specifiers.join('\n')}\n`, { mode: 0o644 });
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

/**
 * Runs one build command (pip or npm inside a one-shot bubblewrap sandbox) with a minimal env,
 * as `ids` when given, in its own process group killed at `timeoutMs`; keeps the last 64 kB of
 * its output for the error message.
 */
export function runBuild(cmd: string, args: string[], ids: { uid?: number; gid?: number }, timeoutMs: number): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    let output = '';
    let timedOut = false;
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' }, detached: true, ...(ids.uid !== undefined ? { uid: ids.uid, gid: ids.gid } : {}) });
    const keep = (d: Buffer): void => void (output = (output + d.toString()).slice(-64_000));
    p.stdout.on('data', keep);
    p.stderr.on('data', keep);
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
      resolve({ code: -1, output: e.message, timedOut });
    });
    p.once('close', (code) => {
      clearTimeout(t);
      resolve({ code, output, timedOut });
    });
  });
}
