import { spawn } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { oneShotArgs, VENV_MOUNT } from './bwrap.args';
import { environmentKey, failedPackage } from './requirements';

export interface PipIndexOptions {
  indexUrl?: string;
  extraIndexUrl?: string;
  /** Local wheel directories or URLs (pip --find-links). */
  findLinks?: string[];
  noIndex?: boolean;
}

export interface VenvBuilderOptions {
  root: string;
  bwrapPath: string;
  supportDir: string;
  /** System interpreter the virtualenvs are made from. */
  python: string;
  pythonVersion: string;
  pip: PipIndexOptions;
  uid?: number;
  gid?: number;
  timeoutMs: number;
}

export class DependencyInstallError extends Error {
  constructor(
    readonly packageName: string,
    readonly pipMessage: string,
  ) {
    super(`could not install ${packageName}: ${pipMessage}`);
  }
}

const READY = '.toolplane-ready';

/**
 * Virtualenvs keyed by (python version, sorted requirements), built once per key: concurrent
 * first calls share one build (in this process) and an O_EXCL lock file serializes runners that
 * share the root. `pip install` runs inside a one-shot bubblewrap sandbox as the unprivileged uid
 * (setup.py of an sdist is tool code too), with the network (for an index) and only the venv
 * writable, mounted at VENV_MOUNT as the slots will see it. A finished venv carries a marker file; a half-built one is removed and rebuilt.
 */
export class VenvBuilder {
  private readonly building = new Map<string, Promise<string>>();
  builds = 0;

  constructor(private readonly o: VenvBuilderOptions) {}

  dirFor(specifiers: readonly string[]): string {
    return path.join(this.o.root, `py-${environmentKey(this.o.pythonVersion, specifiers)}`);
  }

  ensure(specifiers: readonly string[]): Promise<string> {
    const dir = this.dirFor(specifiers);
    if (existsSync(path.join(dir, READY))) return Promise.resolve(dir);
    let p = this.building.get(dir);
    if (!p) {
      p = this.buildLocked(dir, specifiers).finally(() => this.building.delete(dir));
      this.building.set(dir, p);
    }
    return p;
  }

  private async buildLocked(dir: string, specifiers: readonly string[]): Promise<string> {
    await fs.mkdir(this.o.root, { recursive: true, mode: 0o755 });
    const lock = `${dir}.lock`;
    const deadline = Date.now() + this.o.timeoutMs + 30_000;
    for (;;) {
      if (existsSync(path.join(dir, READY))) return dir;
      try {
        await (await fs.open(lock, 'wx')).close();
        break;
      } catch {
        const age = Date.now() - (await fs.stat(lock).then((s) => s.mtimeMs).catch(() => Date.now()));
        if (age > this.o.timeoutMs + 30_000 || Date.now() > deadline) await fs.rm(lock, { force: true });
        else await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      if (existsSync(path.join(dir, READY))) return dir;
      await fs.rm(dir, { recursive: true, force: true });
      await this.build(dir, specifiers);
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

  private async build(dir: string, specifiers: readonly string[]): Promise<void> {
    const made = await run(this.o.python, ['-I', '-m', 'venv', '--without-pip', dir], {}, 60_000);
    if (made.code !== 0) throw new DependencyInstallError(specifiers[0] ?? 'venv', `python -m venv failed: ${made.output.trim().slice(-2000)}`);
    if (this.o.uid !== undefined) await chownTree(dir, this.o.uid, this.o.gid ?? this.o.uid);
    const pip = ['/usr/bin/python3', '-I', '-m', 'pip', '--python', `${VENV_MOUNT}/bin/python3`, 'install', '--no-input', '--disable-pip-version-check', '--no-cache-dir', '--progress-bar', 'off'];
    const { indexUrl, extraIndexUrl, findLinks = [], noIndex } = this.o.pip;
    if (indexUrl) pip.push('--index-url', indexUrl);
    if (extraIndexUrl) pip.push('--extra-index-url', extraIndexUrl);
    for (const f of findLinks) pip.push('--find-links', f);
    if (noIndex) pip.push('--no-index');
    pip.push('--', ...specifiers);
    const localLinks = findLinks.filter((f) => f.startsWith('/'));
    const args = oneShotArgs({ supportDir: this.o.supportDir, network: !noIndex, writable: dir, writableAt: VENV_MOUNT, readable: localLinks, command: pip });
    const r = await run(this.o.bwrapPath, args, { uid: this.o.uid, gid: this.o.gid }, this.o.timeoutMs);
    if (r.code !== 0) {
      const message = r.timedOut ? `pip did not finish within ${this.o.timeoutMs} ms` : pipMessage(r.output);
      throw new DependencyInstallError(failedPackage(r.output, specifiers), message);
    }
  }
}

function pipMessage(output: string): string {
  const errors = output.split('\n').filter((l) => /^ERROR:/.test(l));
  return (errors.length ? errors.join('\n') : output.trim().split('\n').slice(-10).join('\n')).slice(0, 4000);
}

async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await fs.chown(dir, uid, gid);
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, uid, gid);
    else await fs.lchown(p, uid, gid);
  }
}

function run(cmd: string, args: string[], ids: { uid?: number; gid?: number }, timeoutMs: number): Promise<{ code: number | null; output: string; timedOut: boolean }> {
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
