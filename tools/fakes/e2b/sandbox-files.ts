/**
 * A fake sandbox's filesystem as envd shows it, over host directories: `/home/user` and `/tmp` are
 * the sandbox's own (read-write), `/usr` and the fake's `readable` paths are the host's
 * (read-only) — the same binds its commands see under bubblewrap. Paths are resolved in the
 * sandbox's namespace, following symlinks the way the sandbox would (an absolute link target is a
 * sandbox path, never a host one), so a link a command made cannot point the fake, which runs on
 * the host, at the host's files.
 *
 * Known limit: a command racing a file operation (replacing a directory by a symlink between the
 * resolution and the open) is not defended against beyond O_NOFOLLOW on the last component.
 */
import { constants, createReadStream, promises as fs, type ReadStream, type Stats } from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';

/** The default user's home: relative paths resolve here (envd: relative to the user's home). */
export const HOME = '/home/user';
const MAX_SYMLINKS = 40;

export interface Mount {
  /** Where the sandbox sees it. */
  at: string;
  /** The host directory. */
  host: string;
  writable: boolean;
}

export type FsErrorKind = 'not_found' | 'invalid' | 'permission' | 'exists';

/** A filesystem failure, worded like envd's answers (its HTTP and RPC handlers map the kind). */
export class FsError extends Error {
  constructor(
    readonly kind: FsErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** envd's `filesystem.EntryInfo` in proto3 JSON (int64 as a string, enums by name). */
export interface EntryInfoJson {
  name: string;
  type: 'FILE_TYPE_FILE' | 'FILE_TYPE_DIRECTORY' | 'FILE_TYPE_SYMLINK' | 'FILE_TYPE_UNSPECIFIED';
  path: string;
  size: string;
  mode: number;
  permissions: string;
  owner: string;
  group: string;
  modifiedTime: string;
  symlinkTarget?: string;
  metadata?: Record<string, string>;
}

interface Resolved {
  /** Normalized sandbox path with every symlink resolved (the last one only if followed). */
  path: string;
  host?: string;
  mount?: Mount;
}

export class SandboxFiles {
  /** User-defined metadata of uploaded files (envd keeps it in `user.e2b.*` xattrs), by sandbox path. */
  private readonly metadata = new Map<string, Record<string, string>>();

  constructor(
    private readonly mounts: readonly Mount[],
    /** Owner of what the fake creates (the uid commands run as), when the fake runs as root. */
    private readonly owner?: { uid: number; gid: number },
  ) {}

  async read(p: string): Promise<{ path: string; size: number; stream: ReadStream }> {
    const r = await this.resolve(p);
    const st = await this.statOf(r, p);
    if (st.isDirectory()) throw new FsError('invalid', `path '${r.path}' is a directory`);
    const handle = await fs.open(r.host!, constants.O_RDONLY | constants.O_NOFOLLOW);
    return { path: r.path, size: st.size, stream: createReadStream('', { fd: handle, autoClose: true }) };
  }

  /** Writes (creates or truncates) a file, creating its parent directories; envd's upload. */
  async write(
    p: string,
    data: Buffer | Readable,
    metadata?: Record<string, string>,
  ): Promise<{ name: string; type: 'file'; path: string; metadata?: Record<string, string> }> {
    const r = await this.writableTarget(p, `error opening file '${path.posix.resolve(HOME, p)}': permission denied`);
    await this.makeParents(r);
    const existing = await fs.lstat(r.host!).catch(() => undefined);
    if (existing?.isDirectory()) throw new FsError('invalid', `path '${r.path}' is a directory`);
    const handle = await fs.open(
      r.host!,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o644,
    );
    try {
      if (Buffer.isBuffer(data)) await handle.writeFile(data);
      else for await (const chunk of data) await handle.write(chunk as Buffer);
      if (this.owner) await handle.chown(this.owner.uid, this.owner.gid);
    } finally {
      await handle.close();
    }
    // Each upload replaces the file's metadata with exactly the keys it sends (envd's /files doc).
    if (metadata && Object.keys(metadata).length) this.metadata.set(r.path, metadata);
    else this.metadata.delete(r.path);
    return {
      name: path.posix.basename(r.path),
      type: 'file',
      path: r.path,
      ...(metadata && Object.keys(metadata).length ? { metadata } : {}),
    };
  }

  async stat(p: string): Promise<EntryInfoJson> {
    const r = await this.resolve(p, false);
    if (!r.host) return this.virtualDir(r.path, p);
    return this.entryOf(r.path, r.host, await this.lstatOf(r, p));
  }

  async list(p: string, depth: number): Promise<EntryInfoJson[]> {
    const r = await this.resolve(p);
    if (!r.host) {
      if (!this.virtualChildren(r.path).length) throw new FsError('not_found', `path '${r.path}' does not exist`);
      const entries: EntryInfoJson[] = [];
      for (const child of this.virtualChildren(r.path)) entries.push(await this.stat(child));
      return entries;
    }
    const st = await this.statOf(r, p);
    if (!st.isDirectory()) throw new FsError('invalid', `path '${r.path}' is not a directory`);
    return this.walk(r.path, r.host, Math.max(1, depth));
  }

  async makeDir(p: string): Promise<EntryInfoJson> {
    const r = await this.writableTarget(
      p,
      `error creating directory '${path.posix.resolve(HOME, p)}': permission denied`,
    );
    const st = await fs.lstat(r.host!).catch(() => undefined);
    if (st?.isDirectory()) throw new FsError('exists', `directory '${r.path}' already exists`);
    if (st) throw new FsError('invalid', `path '${r.path}' already exists and is not a directory`);
    await this.makeParents(r);
    await fs.mkdir(r.host!, { mode: 0o755 });
    if (this.owner) await fs.chown(r.host!, this.owner.uid, this.owner.gid);
    return this.entryOf(r.path, r.host!, await fs.lstat(r.host!));
  }

  async remove(p: string): Promise<void> {
    const r = await this.writableTarget(p, `error removing '${path.posix.resolve(HOME, p)}': permission denied`, false);
    await this.lstatOf(r, p);
    await fs.rm(r.host!, { recursive: true, force: false });
    for (const key of [...this.metadata.keys()])
      if (key === r.path || key.startsWith(`${r.path}/`)) this.metadata.delete(key);
  }

  async move(source: string, destination: string): Promise<EntryInfoJson> {
    const from = await this.writableTarget(source, `error moving '${source}': permission denied`, false);
    await this.lstatOf(from, source);
    const to = await this.writableTarget(destination, `error moving to '${destination}': permission denied`, false);
    await this.makeParents(to);
    await fs.rename(from.host!, to.host!);
    const meta = this.metadata.get(from.path);
    this.metadata.delete(from.path);
    if (meta) this.metadata.set(to.path, meta);
    return this.entryOf(to.path, to.host!, await fs.lstat(to.host!));
  }

  /**
   * Resolves a sandbox path (relative to HOME) to its host path, following symlinks inside the
   * sandbox's namespace; the last component is followed only when `followLast`.
   */
  async resolve(p: string, followLast = true): Promise<Resolved> {
    let pending = path.posix.resolve(HOME, p).split('/').filter(Boolean);
    let done: string[] = [];
    let hops = 0;
    while (pending.length) {
      const name = pending.shift()!;
      if (name === '.') continue;
      if (name === '..') {
        done.pop();
        continue;
      }
      done.push(name);
      if (!pending.length && !followLast) break;
      const current = `/${done.join('/')}`;
      const host = this.hostOf(current)?.host;
      if (!host) continue; // a directory of the sandbox's skeleton (/, /home)
      if (this.mounts.some((m) => m.at === current)) continue; // a mount point: bwrap bound what its host path resolves to
      const st = await fs.lstat(host).catch(() => undefined);
      if (!st?.isSymbolicLink()) continue; // missing components stay missing
      if (++hops > MAX_SYMLINKS) throw new FsError('invalid', `path '${p}': too many levels of symbolic links`);
      const target = await fs.readlink(host);
      done.pop();
      if (target.startsWith('/')) done = [];
      pending = [...target.split('/').filter(Boolean), ...pending];
    }
    const resolved = `/${done.join('/')}`;
    return { path: resolved, ...this.hostOf(resolved) };
  }

  /** Host path of a resolved sandbox path: under the innermost mount holding it. */
  private hostOf(sandboxPath: string): { host: string; mount: Mount } | undefined {
    let best: Mount | undefined;
    for (const m of this.mounts) {
      if ((sandboxPath === m.at || sandboxPath.startsWith(`${m.at}/`)) && (!best || m.at.length > best.at.length))
        best = m;
    }
    return best ? { host: best.host + sandboxPath.slice(best.at.length), mount: best } : undefined;
  }

  private async writableTarget(p: string, denied: string, followLast = true): Promise<Resolved> {
    const r = await this.resolve(p, followLast);
    if (!r.host || !r.mount?.writable || r.path === r.mount.at) throw new FsError('permission', denied);
    return r;
  }

  /** Creates the missing parent directories of a resolved path inside its mount. */
  private async makeParents(r: Resolved): Promise<void> {
    const mount = r.mount!;
    const relative = path.posix.relative(mount.at, path.posix.dirname(r.path));
    let host = mount.host;
    for (const part of relative ? relative.split('/') : []) {
      host = path.join(host, part);
      const st = await fs.lstat(host).catch(() => undefined);
      if (st?.isDirectory()) continue;
      if (st) throw new FsError('invalid', `path '${path.posix.dirname(r.path)}': '${part}' is not a directory`);
      await fs.mkdir(host, { mode: 0o755 });
      if (this.owner) await fs.chown(host, this.owner.uid, this.owner.gid);
    }
  }

  private async statOf(r: Resolved, asked: string): Promise<Stats> {
    if (!r.host) throw new FsError('not_found', `path '${path.posix.resolve(HOME, asked)}' does not exist`);
    return fs.stat(r.host).catch(() => {
      throw new FsError('not_found', `path '${path.posix.resolve(HOME, asked)}' does not exist`);
    });
  }

  private async lstatOf(r: Resolved, asked: string): Promise<Stats> {
    if (!r.host) throw new FsError('not_found', `path '${path.posix.resolve(HOME, asked)}' does not exist`);
    return fs.lstat(r.host).catch(() => {
      throw new FsError('not_found', `path '${path.posix.resolve(HOME, asked)}' does not exist`);
    });
  }

  private async walk(sandboxDir: string, hostDir: string, depth: number): Promise<EntryInfoJson[]> {
    const entries: EntryInfoJson[] = [];
    for (const name of (await fs.readdir(hostDir)).sort()) {
      const host = path.join(hostDir, name);
      const st = await fs.lstat(host).catch(() => undefined);
      if (!st) continue;
      const sandboxPath = path.posix.join(sandboxDir, name);
      entries.push(await this.entryOf(sandboxPath, host, st));
      if (depth > 1 && st.isDirectory()) entries.push(...(await this.walk(sandboxPath, host, depth - 1)));
    }
    return entries;
  }

  private async entryOf(sandboxPath: string, host: string, st: Stats): Promise<EntryInfoJson> {
    const symlinkTarget = st.isSymbolicLink() ? (await this.resolve(sandboxPath)).path : undefined;
    const metadata = this.metadata.get(sandboxPath);
    return {
      name: path.posix.basename(sandboxPath) || '/',
      type: st.isSymbolicLink()
        ? 'FILE_TYPE_SYMLINK'
        : st.isDirectory()
          ? 'FILE_TYPE_DIRECTORY'
          : st.isFile()
            ? 'FILE_TYPE_FILE'
            : 'FILE_TYPE_UNSPECIFIED',
      path: sandboxPath,
      size: String(st.size),
      mode: st.mode & 0o777,
      permissions: goFileMode(st),
      owner: this.nameOf(st.uid),
      group: this.nameOf(st.gid, true),
      modifiedTime: st.mtime.toISOString(),
      ...(symlinkTarget !== undefined ? { symlinkTarget } : {}),
      ...(metadata ? { metadata } : {}),
    };
  }

  /** Names as the sandbox sees them: the command user is `user` (as in E2B), uid 0 is root. */
  private nameOf(id: number, group = false): string {
    const own = group ? (this.owner?.gid ?? process.getgid?.()) : (this.owner?.uid ?? process.getuid?.());
    if (id === own) return 'user';
    return id === 0 ? 'root' : String(id);
  }

  /** Directories that exist only as the parents of mount points (/, /home). */
  private virtualChildren(dir: string): string[] {
    const prefix = dir === '/' ? '/' : `${dir}/`;
    const children = new Set<string>();
    for (const m of this.mounts)
      if (m.at.startsWith(prefix)) children.add(prefix + m.at.slice(prefix.length).split('/')[0]!);
    return [...children].sort();
  }

  private virtualDir(sandboxPath: string, asked: string): EntryInfoJson {
    if (!this.virtualChildren(sandboxPath).length)
      throw new FsError('not_found', `path '${path.posix.resolve(HOME, asked)}' does not exist`);
    return {
      name: path.posix.basename(sandboxPath) || '/',
      type: 'FILE_TYPE_DIRECTORY',
      path: sandboxPath,
      size: '4096',
      mode: 0o755,
      permissions: 'drwxr-xr-x',
      owner: 'root',
      group: 'root',
      modifiedTime: new Date(0).toISOString(),
    };
  }
}

/** Go's `fs.FileMode.String()` (what envd reports as `permissions`): type letters, then rwx bits. */
function goFileMode(st: Stats): string {
  let kind = '';
  if (st.isDirectory()) kind += 'd';
  if (st.isSymbolicLink()) kind += 'L';
  if (st.isFIFO()) kind += 'p';
  if (st.isSocket()) kind += 'S';
  if (st.isBlockDevice()) kind += 'D';
  if (st.isCharacterDevice()) kind += 'Dc';
  if (st.mode & 0o4000) kind += 'u';
  if (st.mode & 0o2000) kind += 'g';
  if (st.mode & 0o1000) kind += 't';
  const bits = 'rwxrwxrwx'
    .split('')
    .map((c, i) => (st.mode & (1 << (8 - i)) ? c : '-'))
    .join('');
  return (kind || '-') + bits;
}
