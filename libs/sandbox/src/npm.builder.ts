import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { oneShotArgs } from './bwrap.args';
import { DependencyInstallError } from './venv.builder';
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
import { environmentKey } from './requirements';

/** Where the sandbox sees the Node binary, npm, and a call's node_modules (`${NPM_MOUNT}/node_modules`). */
export const NODE_MOUNT = '/opt/node/bin/node';
export const NPM_CLI_MOUNT = '/opt/npm-cli';
export const NPM_MOUNT = '/opt/npm';

export interface NpmSourceOptions {
  /** `--registry` for npm (default: npm's own). */
  registry?: string;
  /**
   * Directories of package tarballs (`npm pack` output, `<name>-<version>.tgz`, scoped
   * `@s/name` → `s-name-<version>.tgz`). A requirement found there is installed from the file.
   */
  localDirs?: string[];
  /** Never reach a registry: a requirement not found in `localDirs` fails. */
  offline?: boolean;
}

export interface NodeModulesBuilderOptions {
  root: string;
  bwrapPath: string;
  supportDir: string;
  /** Host path of the Node binary (bound read-only at NODE_MOUNT). */
  node: string;
  nodeVersion: string;
  /** Host path of npm's package dir (the one holding bin/npm-cli.js). */
  npmDir: string;
  npm: NpmSourceOptions;
  uid?: number;
  gid?: number;
  timeoutMs: number;
  /** The network of a build that needs the registry (only the registry is reachable). */
  network: BuildNetworkFor;
  /** CA bundle and proxy of builds. */
  build?: BuildSettings;
}

const NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;
const VERSION = /^[A-Za-z0-9.*+^~<>=| -]+$/;

/** `name` / `name@range` specifiers, sorted; throws on anything else (URLs, paths, git, tags with '/'). */
export function npmSpecifiers(reqs: ReadonlyArray<{ name: string; version?: string | null }>): string[] {
  const out = new Set<string>();
  for (const r of reqs) {
    const name = r.name.trim();
    if (!NAME.test(name) || name.length > 214) throw new Error(`invalid npm package name ${JSON.stringify(r.name)}`);
    const version = (r.version ?? '').trim();
    if (version && !VERSION.test(version)) throw new Error(`invalid version ${JSON.stringify(r.version)} for ${name}`);
    out.add(version ? `${name}@${version}` : name);
  }
  return [...out].sort();
}

function splitSpec(spec: string): { name: string; version?: string } {
  const at = spec.indexOf('@', 1);
  return at < 0 ? { name: spec } : { name: spec.slice(0, at), version: spec.slice(at + 1) };
}

/** The npm command of a build (run in the build sandbox): targets (specifiers or local tarballs), scripts or not, registry, the build CA bundle and proxy. */
export function npmInstallCommand(
  npm: NpmSourceOptions,
  build: BuildSettings,
  targets: readonly string[],
  buildScripts: boolean,
): string[] {
  const cmd = [
    NODE_MOUNT,
    `${NPM_CLI_MOUNT}/bin/npm-cli.js`,
    'install',
    '--no-audit',
    '--no-fund',
    '--no-update-notifier',
    '--no-package-lock',
    '--omit=dev',
    '--loglevel=error',
  ];
  if (!buildScripts) cmd.push('--ignore-scripts');
  if (npm.registry) cmd.push('--registry', npm.registry);
  if (npm.offline) cmd.push('--offline');
  if (build.caBundle) cmd.push('--cafile', BUILD_CA_MOUNT);
  if (build.proxy) cmd.push('--proxy', build.proxy, '--https-proxy', build.proxy);
  cmd.push('--', ...targets);
  return cmd;
}

/**
 * node_modules trees keyed by sha256(Node version, scripts on/off, sorted specifiers), built once
 * per key (like VenvBuilder: shared in-process promise, O_EXCL lock across runners, ready marker
 * beside the tree, the tree locked down, the build's state kept). `npm install` runs in a one-shot
 * bubblewrap sandbox as the unprivileged uid, confined like a tool, with only the target dir
 * writable and no network but the registry's pinned addresses (or the build proxy's); with
 * `--ignore-scripts` unless the call opts in to build scripts (lifecycle scripts are tool code
 * too). Never on the hot path.
 */
export class NodeModulesBuilder {
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

  constructor(private readonly o: NodeModulesBuilderOptions) {
    this.once = new BuildOnce({ root: o.root, timeoutMs: o.timeoutMs });
  }

  dirFor(specifiers: readonly string[], buildScripts = false): string {
    return path.join(
      this.o.root,
      `npm-${environmentKey(`node ${this.o.nodeVersion}${buildScripts ? ' scripts' : ''}`, specifiers)}`,
    );
  }

  /** The host dir to bind at NPM_MOUNT (it holds node_modules/). */
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
    return (dir: string, progress: (text: string) => void) => this.build(dir, specifiers, buildScripts, progress);
  }

  /** A requirement → a tarball path in a local dir (exact version, or the newest without one), else undefined. */
  private async localTarball(spec: string): Promise<string | undefined> {
    const { name, version } = splitSpec(spec);
    const base = name.replace(/^@/, '').replace('/', '-');
    for (const d of this.o.npm.localDirs ?? []) {
      const files = await fs.readdir(d).catch(() => [] as string[]);
      const versions = files
        .map((f) => (f.startsWith(`${base}-`) && f.endsWith('.tgz') ? f.slice(base.length + 1, -4) : undefined))
        .filter((v): v is string => v !== undefined && /^\d+\.\d+\.\d+/.test(v));
      const pick = version
        ? versions.find((v) => v === version.replace(/^[=v]+/, ''))
        : versions.sort(compareVersions).at(-1);
      if (pick) return path.join(d, `${base}-${pick}.tgz`);
    }
    return undefined;
  }

  private async build(
    dir: string,
    specifiers: readonly string[],
    buildScripts: boolean,
    progress: (text: string) => void,
  ): Promise<void> {
    progress(`npm: installing ${specifiers.length} package${specifiers.length === 1 ? '' : 's'}`);
    await fs.mkdir(dir, { recursive: true, mode: 0o755 });
    await fs.writeFile(
      path.join(dir, 'package.json'),
      '{"name":"toolplane-tool-env","version":"0.0.0","private":true}\n',
      { mode: 0o644 },
    );
    if (this.o.uid !== undefined) {
      await fs.chown(dir, this.o.uid, this.o.gid ?? this.o.uid);
      await fs.chown(path.join(dir, 'package.json'), this.o.uid, this.o.gid ?? this.o.uid);
    }
    const targets: string[] = [];
    for (const s of specifiers) {
      const local = await this.localTarball(s);
      if (local) targets.push(local);
      else if (this.o.npm.offline)
        throw new DependencyInstallError(
          splitSpec(s).name,
          `not found in the local npm sources (${(this.o.npm.localDirs ?? []).join(', ') || 'none configured'}) and the registry is off`,
        );
      else targets.push(s);
    }
    const settings = this.o.build ?? {};
    const npm = npmInstallCommand(this.o.npm, settings, targets, buildScripts);
    const readable = (this.o.npm.localDirs ?? []).filter((d) => d.startsWith('/') && existsSync(d));
    // Only a requirement that is not a local tarball needs the registry.
    const needsRegistry = !this.o.npm.offline && !targets.every((t) => t.startsWith('/'));
    const network = await this.o.network(
      buildUrls(needsRegistry ? [this.o.npm.registry ?? 'https://registry.npmjs.org/'] : [], settings),
    );
    try {
      const args = oneShotArgs({
        supportDir: this.o.supportDir,
        network,
        writable: dir,
        writableAt: NPM_MOUNT,
        readable,
        extra: [
          '--ro-bind',
          this.o.node,
          NODE_MOUNT,
          '--ro-bind',
          this.o.npmDir,
          NPM_CLI_MOUNT,
          ...buildSettingsBinds(settings),
        ],
        chdir: NPM_MOUNT,
        command: npm,
      });
      const r = await runBuild(this.o.bwrapPath, args, { uid: this.o.uid, gid: this.o.gid }, this.o.timeoutMs, {
        attachNetwork: network?.attach,
      });
      if (r.code !== 0) {
        const message = r.timedOut ? `npm did not finish within ${this.o.timeoutMs} ms` : npmMessage(r.output);
        throw new DependencyInstallError(failedNpmPackage(r.output, specifiers), message);
      }
    } finally {
      await network?.release();
    }
  }
}

function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++)
    if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

function npmMessage(output: string): string {
  const errors = output.split('\n').filter((l) => /^npm (ERR!|error)/.test(l) && !/A complete log|verbose/.test(l));
  return (errors.length ? errors.join('\n') : output.trim().split('\n').slice(-10).join('\n')).slice(0, 4000);
}

/** The package npm names in its failure output, else the first requirement's name. */
export function failedNpmPackage(output: string, specifiers: readonly string[]): string {
  const m =
    /No matching version found for (@?[^@\s]+)@/.exec(output) ??
    /404 Not Found - GET \S+\/(@?[^/\s]+(?:%2[fF][^/\s]+)?)\b/.exec(output) ??
    /'(@?[^@'\s]+)@[^']*' is not in (?:this|the npm) registry/.exec(output) ??
    /ENOENT[^\n]*?\/([^/\s]+)-\d+\.\d+\.\d+[^/\s]*\.tgz/.exec(output);
  const name = m?.[1]?.replace(/%2[fF]/, '/');
  return name ?? (specifiers[0] ? splitSpec(specifiers[0]).name : 'unknown');
}
