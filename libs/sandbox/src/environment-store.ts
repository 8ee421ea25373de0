import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  isReady,
  LOCK_SUFFIX,
  READY_SUFFIX,
  removeTree,
  writeCaBundle,
  type BuildSettings,
  type BuildState,
  type ReadyMarker,
} from './build-process';
import type { BuildNetworkFor } from './build-network';
import { VENV_MOUNT } from './bwrap.args';
import { NodeModulesBuilder, npmSpecifiers, type NpmSourceOptions } from './npm.builder';
import { pipSpecifiers, requirementName } from './requirements';
import type { EnvironmentSpec, EnvironmentState, PrepareOptions } from './sandbox.types';
import { DependencyInstallError, VenvBuilder, type PipIndexOptions } from './venv.builder';

const execFileP = promisify(execFile);
/** A marker's time is refreshed at most this often (it is the environment's "last used" for eviction). */
const TOUCH_EVERY_MS = 60_000;

export interface EnvironmentStoreOptions {
  workRoot: string;
  bwrapPath: string;
  supportDir: string;
  /** The system interpreter and its version (virtualenvs are made from it). */
  python: string;
  pythonVersion: string;
  runAs?: { uid: number; gid: number };
  pip: PipIndexOptions;
  pipTimeoutMs: number;
  nodePath?: string;
  npmDir?: string;
  npm: NpmSourceOptions;
  npmTimeoutMs: number;
  network: BuildNetworkFor;
  /** Package-index settings of every build: an extra CA file (added to the system's CAs) and a proxy. */
  build?: { caFile?: string; proxy?: string };
  /** Bytes all virtualenvs and node_modules trees may occupy; beyond, the least recently used unused ones are evicted. */
  maxBytes: number;
  /** An environment used (by any runner sharing the work root) more recently than this is never evicted. */
  minIdleMs: number;
  /** Is the environment dir used by a live sandbox of this runner? */
  inUse: (dir: string) => boolean;
  onEvict?: (dir: string, bytes: number) => void;
}

/** What a call runs with: the interpreter (or a virtualenv's), or Node with a node_modules tree. */
export interface Environment {
  /** Identifies the environment (with network and work-dir size, the pool key). */
  key: string;
  python: string;
  venvDir?: string;
  node?: string;
  npmDir?: string;
}

/** One environment a spec needs: its key and its builder's view of it. */
interface Target {
  key: string;
  dir: string;
  state(): BuildState;
  prepare(o: PrepareOptions): Promise<BuildState>;
  ensure(): Promise<string>;
}

/**
 * The environment store: virtualenvs and node_modules trees keyed by requirements, built once in a
 * sandbox (VenvBuilder, NodeModulesBuilder), reused, and evicted least-recently-used under a byte
 * budget — never one a live sandbox uses, nor one any runner sharing the work root used recently.
 * It knows each environment's state (none, building with progress, ready, failed with the error)
 * and builds one in the background when asked (`prepare`): a call need not wait for it.
 */
export class EnvironmentStore {
  evictions = 0;
  /** Shared by both builders; the CA bundle is written by init(). */
  private readonly settings: BuildSettings;
  private readonly venvs: VenvBuilder;
  private nodeModules?: Promise<NodeModulesBuilder>;
  private nodeRuntime?: Promise<{ node: string; npmDir: string; version: string }>;
  private readonly touched = new Map<string, number>();
  private evicting?: Promise<void>;

  constructor(private readonly o: EnvironmentStoreOptions) {
    this.settings = { ...(o.build?.proxy ? { proxy: o.build.proxy } : {}) };
    this.venvs = new VenvBuilder({
      root: this.venvRoot,
      bwrapPath: o.bwrapPath,
      supportDir: o.supportDir,
      python: o.python,
      pythonVersion: o.pythonVersion,
      pip: o.pip,
      uid: o.runAs?.uid,
      gid: o.runAs?.gid,
      timeoutMs: o.pipTimeoutMs,
      network: o.network,
      build: this.settings,
    });
  }

  private npm?: NodeModulesBuilder;

  get builds(): number {
    return this.venvs.builds;
  }

  get npmBuilds(): number {
    return this.npm?.builds ?? 0;
  }

  /** Builds (virtualenvs and node_modules trees) that failed, and those running now. */
  get failedBuilds(): number {
    return this.venvs.failures + (this.npm?.failures ?? 0);
  }

  get buildsInProgress(): number {
    return this.venvs.inProgress + (this.npm?.inProgress ?? 0);
  }

  private get venvRoot(): string {
    return path.join(this.o.workRoot, 'venvs');
  }

  private get npmRoot(): string {
    return path.join(this.o.workRoot, 'node_modules');
  }

  /** Makes the roots and removes what an interrupted build or eviction left (no ready marker, no lock); writes the builds' CA bundle. */
  async init(): Promise<void> {
    if (this.o.build?.caFile) this.settings.caBundle = await writeCaBundle(this.o.workRoot, this.o.build.caFile);
    for (const root of [this.venvRoot, this.npmRoot]) {
      await fs.mkdir(root, { recursive: true, mode: 0o755 });
      for (const e of await fs.readdir(root)) {
        const dir = path.join(root, e);
        const evicted = /\.evicted-[0-9a-f]+$/.test(e);
        const orphan = /^(py|npm)-[0-9a-f]+$/.test(e) && !isReady(dir) && !existsSync(`${dir}${LOCK_SUFFIX}`);
        if (evicted || orphan) await removeTree(dir).catch(() => undefined);
      }
    }
  }

  async python(pipRequirements: readonly string[], buildScripts: boolean): Promise<Environment> {
    const reqs = pipRequirements.length ? pipSpecifiers(pipRequirements.map(parseSpecifier)) : [];
    if (reqs.length === 0) return { key: 'default', python: this.o.python };
    const venvDir = await this.venvs.ensure(reqs, buildScripts);
    this.used(venvDir);
    return { key: path.basename(venvDir), python: `${VENV_MOUNT}/bin/python3`, venvDir };
  }

  async node(npmRequirements: readonly string[], buildScripts: boolean): Promise<Environment> {
    const { node } = await this.nodeHost();
    const reqs = npmRequirements.length ? npmSpecifiers(npmRequirements.map(parseNpmSpecifier)) : [];
    if (reqs.length === 0) return { key: 'node', python: this.o.python, node };
    const npmDir = await (await this.npmBuilder()).ensure(reqs, buildScripts);
    this.used(npmDir);
    return { key: path.basename(npmDir), python: this.o.python, node, npmDir };
  }

  /** The state of the environment `spec` needs; starts nothing. */
  async status(spec: EnvironmentSpec): Promise<EnvironmentState> {
    let t: Target | null;
    try {
      t = await this.target(spec);
    } catch (e) {
      return { key: null, status: 'failed', since: Date.now(), error: { message: (e as Error).message } };
    }
    return t ? stateOf(t.key, t.state()) : { key: null, status: 'ready' };
  }

  /**
   * Starts the build of the environment `spec` needs in the background unless it is ready or being
   * built (one build per environment; askers share it; a failed one is started again as
   * `options.retryFailedAfterMs` says), waits as `options` say, and answers the state then.
   */
  async prepare(spec: EnvironmentSpec, options: PrepareOptions = {}): Promise<EnvironmentState> {
    let t: Target | null;
    try {
      t = await this.target(spec);
    } catch (e) {
      return { key: null, status: 'failed', since: Date.now(), error: { message: (e as Error).message } };
    }
    if (!t) return { key: null, status: 'ready' };
    const s = await t.prepare(options);
    // A finished build is a use (its marker's time) and may push the store over its budget.
    if (s.status === 'ready') this.used(t.dir);
    else if (s.status === 'building')
      void t.ensure().then(
        (dir) => this.used(dir),
        () => undefined,
      );
    return stateOf(t.key, s);
  }

  private async target(spec: EnvironmentSpec): Promise<Target | null> {
    const scripts = spec.buildScripts === true;
    if (isNodeSource(spec.sourceType)) {
      const reqs = spec.npmRequirements?.length ? npmSpecifiers(spec.npmRequirements.map(parseNpmSpecifier)) : [];
      if (reqs.length === 0) return null;
      const b = await this.npmBuilder();
      const dir = b.dirFor(reqs, scripts);
      return {
        key: path.basename(dir),
        dir,
        state: () => b.state(reqs, scripts),
        prepare: (o) => b.prepare(reqs, scripts, o),
        ensure: () => b.ensure(reqs, scripts),
      };
    }
    const reqs = spec.pipRequirements?.length ? pipSpecifiers(spec.pipRequirements.map(parseSpecifier)) : [];
    if (reqs.length === 0) return null;
    const dir = this.venvs.dirFor(reqs, scripts);
    return {
      key: path.basename(dir),
      dir,
      state: () => this.venvs.state(reqs, scripts),
      prepare: (o) => this.venvs.prepare(reqs, scripts, o),
      ensure: () => this.venvs.ensure(reqs, scripts),
    };
  }

  /**
   * Evicts least recently used environments until the store fits its budget (one pass at a time).
   * Runs after each build; safe to call any time.
   */
  evict(): Promise<void> {
    this.evicting ??= this.evictOnce().finally(() => (this.evicting = undefined));
    return this.evicting;
  }

  private async evictOnce(): Promise<void> {
    const entries: Array<{ dir: string; bytes: number; lastUsed: number }> = [];
    for (const root of [this.venvRoot, this.npmRoot]) {
      for (const e of await fs.readdir(root).catch(() => [] as string[])) {
        if (!e.endsWith(READY_SUFFIX)) continue;
        const marker = path.join(root, e);
        const st = await fs.lstat(marker).catch(() => null);
        if (!st?.isFile()) continue;
        let bytes = 0;
        try {
          bytes = Number((JSON.parse(await fs.readFile(marker, 'utf8')) as ReadyMarker).bytes) || 0;
        } catch {
          // unreadable marker: counts as empty
        }
        entries.push({ dir: marker.slice(0, -READY_SUFFIX.length), bytes, lastUsed: st.mtimeMs });
      }
    }
    let total = entries.reduce((n, e) => n + e.bytes, 0);
    const now = Date.now();
    for (const e of entries.sort((a, b) => a.lastUsed - b.lastUsed)) {
      if (total <= this.o.maxBytes) return;
      if (this.o.inUse(e.dir) || now - e.lastUsed < this.o.minIdleMs || existsSync(`${e.dir}${LOCK_SUFFIX}`)) continue;
      // The marker goes first: from then on nobody takes the environment; the tree is moved aside
      // and removed.
      await fs.rm(`${e.dir}${READY_SUFFIX}`, { force: true });
      const aside = `${e.dir}.evicted-${randomBytes(4).toString('hex')}`;
      await fs.rename(e.dir, aside).catch(() => undefined);
      await removeTree(aside).catch(() => undefined);
      total -= e.bytes;
      this.evictions++;
      this.touched.delete(e.dir);
      this.o.onEvict?.(e.dir, e.bytes);
    }
  }

  /** Records a use of an environment: its marker's time is its "last used" (shared by the runners of a work root). */
  private used(dir: string): void {
    const now = Date.now();
    if (now - (this.touched.get(dir) ?? 0) < TOUCH_EVERY_MS) return;
    this.touched.set(dir, now);
    const when = new Date(now);
    void fs.utimes(`${dir}${READY_SUFFIX}`, when, when).catch(() => undefined);
    void this.evict().catch(() => undefined);
  }

  /** The Node binary and npm the sandboxes bind, where the sandbox user can read them (see `shareable`). */
  nodeHost(): Promise<{ node: string; npmDir: string; version: string }> {
    this.nodeRuntime ??= (async () => {
      const host = realpathSync(this.o.nodePath ?? process.execPath);
      const { stdout } = await execFileP(host, ['-p', 'process.versions.node'], { env: {} });
      const besideNode = path.resolve(path.dirname(host), '..', 'lib', 'node_modules', 'npm');
      const npmDir =
        this.o.npmDir ??
        (existsSync(path.join(besideNode, 'bin', 'npm-cli.js')) ? besideNode : '/usr/lib/node_modules/npm');
      return {
        node: await this.shareable(host, 'node'),
        npmDir: existsSync(npmDir) ? await this.shareable(npmDir, 'npm') : npmDir,
        version: stdout.trim(),
      };
    })();
    this.nodeRuntime.catch(() => (this.nodeRuntime = undefined));
    return this.nodeRuntime;
  }

  /**
   * A host path bound read-only into sandboxes must be readable by the sandbox user. When the
   * runner runs as root and the path is not (e.g. Node from a checkout under a 0700 temp dir), a
   * copy under the work root is used instead, made once per runner start.
   */
  private async shareable(hostPath: string, name: string): Promise<string> {
    if (!this.o.runAs || (await readableByOthers(hostPath))) return hostPath;
    const copy = path.join(this.o.workRoot, 'host', name);
    await fs.rm(copy, { recursive: true, force: true });
    await fs.mkdir(path.dirname(copy), { recursive: true, mode: 0o755 });
    await fs.cp(hostPath, copy, { recursive: true, dereference: true });
    await execFileP('/bin/chmod', ['-R', 'a+rX', copy]);
    return copy;
  }

  private npmBuilder(): Promise<NodeModulesBuilder> {
    this.nodeModules ??= (async () => {
      const { node, npmDir, version } = await this.nodeHost();
      await fs.mkdir(this.npmRoot, { recursive: true, mode: 0o755 });
      return (this.npm = new NodeModulesBuilder({
        root: this.npmRoot,
        bwrapPath: this.o.bwrapPath,
        supportDir: this.o.supportDir,
        node,
        nodeVersion: version,
        npmDir,
        npm: this.o.npm,
        uid: this.o.runAs?.uid,
        gid: this.o.runAs?.gid,
        timeoutMs: this.o.npmTimeoutMs,
        network: this.o.network,
        build: this.settings,
      }));
    })();
    this.nodeModules.catch(() => (this.nodeModules = undefined));
    return this.nodeModules;
  }
}

/** TypeScript and JavaScript tools run on Node (node_modules trees); the rest on Python (virtualenvs). */
export function isNodeSource(t: string | undefined): boolean {
  return t === 'typescript' || t === 'javascript';
}

function stateOf(key: string, s: BuildState): EnvironmentState {
  return {
    key,
    status: s.status,
    ...(s.since ? { since: s.since } : {}),
    ...(s.progress ? { progress: s.progress } : {}),
    ...(s.error
      ? {
          error: {
            message: s.error.message,
            ...(s.error instanceof DependencyInstallError ? { package: requirementName(s.error.packageName) } : {}),
          },
        }
      : {}),
  };
}

/** `name`, `name==1.0`, `name>=1,<2` → {name, version}. */
function parseSpecifier(s: string): { name: string; version?: string } {
  const m = /^([^<>=!~\s]+)\s*(.*)$/.exec(s.trim());
  if (!m) return { name: s };
  return m[2] ? { name: m[1]!, version: m[2] } : { name: m[1]! };
}

/** `name`, `@scope/name`, `name@1.2.3`, `name@^1` → {name, version}. */
function parseNpmSpecifier(s: string): { name: string; version?: string } {
  const t = s.trim();
  const at = t.indexOf('@', 1);
  return at < 0 ? { name: t } : { name: t.slice(0, at), version: t.slice(at + 1) };
}

/** Can an unprivileged sandbox user reach and read `p` (every directory above it searchable by others)? */
export async function readableByOthers(p: string): Promise<boolean> {
  const st = await fs.stat(p).catch(() => null);
  if (!st || !(st.mode & 0o004)) return false;
  for (let dir = path.dirname(p); ; dir = path.dirname(dir)) {
    const d = await fs.stat(dir).catch(() => null);
    if (!d || !(d.mode & 0o001)) return false;
    if (dir === '/') return true;
  }
}
