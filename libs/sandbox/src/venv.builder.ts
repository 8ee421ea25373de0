import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { oneShotArgs, VENV_MOUNT } from './bwrap.args';
import { environmentKey, failedPackage } from './requirements';
import { BuildOnce, runBuild } from './build-process';
import type { BuildNetworkFor } from './build-network';

export interface PipIndexOptions {
  indexUrl?: string;
  extraIndexUrl?: string;
  /** Local wheel directories or URLs (pip --find-links). */
  findLinks?: string[];
  noIndex?: boolean;
  /** Install wheels only (`--only-binary :all:`): no sdist's setup.py ever runs, unless a call opts in to build scripts. */
  onlyBinary?: boolean;
}

/** The package indexes a pip build may reach (nothing else): the index, PyPI's file host with it, extra index, URL find-links. */
export function pipIndexUrls(o: PipIndexOptions): string[] {
  if (o.noIndex) return (o.findLinks ?? []).filter((f) => /^https?:/.test(f));
  const index = o.indexUrl ?? 'https://pypi.org/simple';
  const urls = [index, ...(o.extraIndexUrl ? [o.extraIndexUrl] : []), ...(o.findLinks ?? []).filter((f) => /^https?:/.test(f))];
  if (/^https:\/\/pypi\.org\//.test(index)) urls.push('https://files.pythonhosted.org/');
  return urls;
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
  /** The network of a build that needs an index (only the index is reachable). */
  network: BuildNetworkFor;
}

export class DependencyInstallError extends Error {
  constructor(
    readonly packageName: string,
    readonly pipMessage: string,
  ) {
    super(`could not install ${packageName}: ${pipMessage}`);
  }
}


/**
 * Virtualenvs keyed by (python version, sorted requirements), built once per key: concurrent
 * first calls share one build (in this process) and an O_EXCL lock file serializes runners that
 * share the root. `pip install` runs inside a one-shot bubblewrap sandbox as the unprivileged uid,
 * confined like a tool (setup.py of an sdist is tool code too: seccomp, no capabilities, no user
 * namespaces), with only the venv writable (mounted at VENV_MOUNT as the slots will see it) and no
 * network but the package index's pinned addresses. Wheels are preferred (`--prefer-binary`);
 * `onlyBinary` refuses sdists unless the call opts in to build scripts. A finished venv is locked
 * down (read-only, owned by the runner) and marked ready beside its dir; a half-built one is
 * removed and rebuilt.
 */
export class VenvBuilder {
  private readonly once: BuildOnce;

  get builds(): number {
    return this.once.builds;
  }

  constructor(private readonly o: VenvBuilderOptions) {
    this.once = new BuildOnce({ root: o.root, timeoutMs: o.timeoutMs });
  }

  /** Wheels only for this build? (`onlyBinary`, unless the call opts in to build scripts.) */
  private wheelsOnly(buildScripts: boolean): boolean {
    return this.o.pip.onlyBinary === true && !buildScripts;
  }

  dirFor(specifiers: readonly string[], buildScripts = false): string {
    return path.join(this.o.root, `py-${environmentKey(`${this.o.pythonVersion}${this.wheelsOnly(buildScripts) ? ' wheels-only' : ''}`, specifiers)}`);
  }

  ensure(specifiers: readonly string[], buildScripts = false): Promise<string> {
    const dir = this.dirFor(specifiers, buildScripts);
    return this.once.ensure(dir, specifiers, (d) => this.build(d, specifiers, this.wheelsOnly(buildScripts)));
  }

  private async build(dir: string, specifiers: readonly string[], wheelsOnly: boolean): Promise<void> {
    const made = await runBuild(this.o.python, ['-I', '-m', 'venv', '--without-pip', dir], {}, 60_000);
    if (made.code !== 0) throw new DependencyInstallError(specifiers[0] ?? 'venv', `python -m venv failed: ${made.output.trim().slice(-2000)}`);
    if (this.o.uid !== undefined) await chownTree(dir, this.o.uid, this.o.gid ?? this.o.uid);
    const pip = ['/usr/bin/python3', '-I', '-m', 'pip', '--python', `${VENV_MOUNT}/bin/python3`, 'install', '--no-input', '--disable-pip-version-check', '--no-cache-dir', '--progress-bar', 'off', '--prefer-binary'];
    if (wheelsOnly) pip.push('--only-binary', ':all:');
    const { indexUrl, extraIndexUrl, findLinks = [], noIndex } = this.o.pip;
    if (indexUrl) pip.push('--index-url', indexUrl);
    if (extraIndexUrl) pip.push('--extra-index-url', extraIndexUrl);
    for (const f of findLinks) pip.push('--find-links', f);
    if (noIndex) pip.push('--no-index');
    // An index the operator configured over plain http is theirs to trust (pip refuses it otherwise).
    for (const u of pipIndexUrls(this.o.pip).filter((x) => x.startsWith('http:'))) pip.push('--trusted-host', new URL(u).host);
    pip.push('--', ...specifiers);
    const localLinks = findLinks.filter((f) => f.startsWith('/'));
    const network = await this.o.network(pipIndexUrls(this.o.pip));
    try {
      const args = oneShotArgs({ supportDir: this.o.supportDir, network, writable: dir, writableAt: VENV_MOUNT, readable: localLinks, command: pip });
      const r = await runBuild(this.o.bwrapPath, args, { uid: this.o.uid, gid: this.o.gid }, this.o.timeoutMs, network?.attach);
      this.check(r, specifiers);
    } finally {
      await network?.release();
    }
  }

  private check(r: { code: number | null; output: string; timedOut: boolean }, specifiers: readonly string[]): void {
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

