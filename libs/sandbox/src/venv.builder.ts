import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { oneShotArgs, VENV_MOUNT } from './bwrap.args';
import { environmentKey, failedPackage } from './requirements';
import {
  BUILD_CA_MOUNT,
  buildSettingsBinds,
  buildUrls,
  BuildOnce,
  runBuild,
  type BuildSettings,
  type BuildState,
} from './build-process';
import type { PrepareOptions } from './sandbox.types';
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
  const urls = [
    index,
    ...(o.extraIndexUrl ? [o.extraIndexUrl] : []),
    ...(o.findLinks ?? []).filter((f) => /^https?:/.test(f)),
  ];
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
  /** CA bundle and proxy of builds. */
  build?: BuildSettings;
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
 * The pip command of a build (run in the build sandbox) and the env it gets: index settings,
 * wheels only or not, the build CA bundle and proxy (also as PIP_CERT / PIP_PROXY, so that the
 * pip pip starts for an sdist's build requirements has them too).
 */
export function pipInstallCommand(
  pipOptions: PipIndexOptions,
  build: BuildSettings,
  specifiers: readonly string[],
  wheelsOnly: boolean,
): { command: string[]; env: Record<string, string> } {
  const pip = [
    '/usr/bin/python3',
    '-I',
    '-m',
    'pip',
    '--python',
    `${VENV_MOUNT}/bin/python3`,
    'install',
    '--no-input',
    '--disable-pip-version-check',
    '--no-cache-dir',
    '--progress-bar',
    'off',
    '--prefer-binary',
  ];
  const env: Record<string, string> = {};
  if (wheelsOnly) pip.push('--only-binary', ':all:');
  const { indexUrl, extraIndexUrl, findLinks = [], noIndex } = pipOptions;
  if (indexUrl) pip.push('--index-url', indexUrl);
  if (extraIndexUrl) pip.push('--extra-index-url', extraIndexUrl);
  for (const f of findLinks) pip.push('--find-links', f);
  if (noIndex) pip.push('--no-index');
  // An index the operator configured over plain http is theirs to trust (pip refuses it otherwise).
  for (const u of pipIndexUrls(pipOptions).filter((x) => x.startsWith('http:')))
    pip.push('--trusted-host', new URL(u).host);
  if (build.caBundle) {
    pip.push('--cert', BUILD_CA_MOUNT);
    env.PIP_CERT = BUILD_CA_MOUNT;
  }
  if (build.proxy) {
    pip.push('--proxy', build.proxy);
    env.PIP_PROXY = build.proxy;
  }
  pip.push('--', ...specifiers);
  return { command: pip, env };
}

/** pip's lines worth showing as a build's progress (never its warnings, nor a build script's own output). */
const PIP_PROGRESS =
  /^(Looking in|Collecting|Processing|Downloading|Obtaining|Building wheels? |Created wheel|Getting requirements|Installing|Preparing metadata|Successfully|Using cached|Requirement already)/;

/** A line with a URL's user:password left out. */
export function withoutCredentials(line: string): string {
  return line.replace(/\/\/[^/\s@]+@/g, '//***@');
}

/**
 * Virtualenvs keyed by (python version, sorted requirements), built once per key: concurrent
 * first calls share one build (in this process) and an O_EXCL lock file serializes runners that
 * share the root. `pip install` runs inside a one-shot bubblewrap sandbox as the unprivileged uid,
 * confined like a tool (setup.py of an sdist is tool code too: seccomp, no capabilities, no user
 * namespaces), with only the venv writable (mounted at VENV_MOUNT as the slots will see it) and no
 * network but the package index's pinned addresses (or the build proxy's). Wheels are preferred
 * (`--prefer-binary`); `onlyBinary` refuses sdists unless the call opts in to build scripts. A
 * finished venv is locked down (read-only, owned by the runner) and marked ready beside its dir; a
 * half-built one is removed and rebuilt. Each build's state (building with pip's last line,
 * ready, failed) is kept (BuildOnce).
 */
export class VenvBuilder {
  private readonly once: BuildOnce;

  get builds(): number {
    return this.once.builds;
  }

  get failures(): number {
    return this.once.failures;
  }

  get inProgress(): number {
    return this.once.inProgress;
  }

  constructor(private readonly o: VenvBuilderOptions) {
    this.once = new BuildOnce({ root: o.root, timeoutMs: o.timeoutMs });
  }

  /** Wheels only for this build? (`onlyBinary`, unless the call opts in to build scripts.) */
  private wheelsOnly(buildScripts: boolean): boolean {
    return this.o.pip.onlyBinary === true && !buildScripts;
  }

  dirFor(specifiers: readonly string[], buildScripts = false): string {
    return path.join(
      this.o.root,
      `py-${environmentKey(`${this.o.pythonVersion}${this.wheelsOnly(buildScripts) ? ' wheels-only' : ''}`, specifiers)}`,
    );
  }

  ensure(specifiers: readonly string[], buildScripts = false): Promise<string> {
    return this.once.ensure(this.dirFor(specifiers, buildScripts), specifiers, this.buildOf(specifiers, buildScripts));
  }

  state(specifiers: readonly string[], buildScripts = false): BuildState {
    return this.once.state(this.dirFor(specifiers, buildScripts));
  }

  /** Starts the build in the background (see BuildOnce.prepare). */
  prepare(specifiers: readonly string[], buildScripts: boolean, o: PrepareOptions): Promise<BuildState> {
    return this.once.prepare(
      this.dirFor(specifiers, buildScripts),
      specifiers,
      this.buildOf(specifiers, buildScripts),
      o,
    );
  }

  private buildOf(specifiers: readonly string[], buildScripts: boolean) {
    return (dir: string, progress: (text: string) => void) =>
      this.build(dir, specifiers, this.wheelsOnly(buildScripts), progress);
  }

  private async build(
    dir: string,
    specifiers: readonly string[],
    wheelsOnly: boolean,
    progress: (text: string) => void,
  ): Promise<void> {
    progress(`pip: installing ${specifiers.length} package${specifiers.length === 1 ? '' : 's'}`);
    const made = await runBuild(this.o.python, ['-I', '-m', 'venv', '--without-pip', dir], {}, 60_000);
    if (made.code !== 0)
      throw new DependencyInstallError(
        specifiers[0] ?? 'venv',
        `python -m venv failed: ${made.output.trim().slice(-2000)}`,
      );
    if (this.o.uid !== undefined) await chownTree(dir, this.o.uid, this.o.gid ?? this.o.uid);
    const settings = this.o.build ?? {};
    const { command, env } = pipInstallCommand(this.o.pip, settings, specifiers, wheelsOnly);
    const localLinks = (this.o.pip.findLinks ?? []).filter((f) => f.startsWith('/'));
    const network = await this.o.network(buildUrls(pipIndexUrls(this.o.pip), settings));
    try {
      const args = oneShotArgs({
        supportDir: this.o.supportDir,
        network,
        writable: dir,
        writableAt: VENV_MOUNT,
        readable: localLinks,
        extra: buildSettingsBinds(settings),
        env,
        command,
      });
      const r = await runBuild(this.o.bwrapPath, args, { uid: this.o.uid, gid: this.o.gid }, this.o.timeoutMs, {
        attachNetwork: network?.attach,
        onLine: (line) => {
          if (PIP_PROGRESS.test(line)) progress(withoutCredentials(line));
        },
      });
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
