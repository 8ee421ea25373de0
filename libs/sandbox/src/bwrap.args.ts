import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';

/** Where the sandbox sees the support files (slot.py, harness.py, seccomp.bpf, passwd, group). */
export const SUPPORT_MOUNT = '/opt/toolplane';
/** Where the sandbox sees the call's virtualenv (never under /tmp: each call mounts its own /tmp). */
export const VENV_MOUNT = '/opt/venv';
const PYTHON_DIR = path.resolve(__dirname, '..', 'python');
const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';

export interface SandboxLayout {
  /** Host dir with the support files (read-only bound at SUPPORT_MOUNT). */
  supportDir: string;
  /** Interpreter the slot runs (the system one; `${VENV_MOUNT}/bin/python3` with a virtualenv). */
  python: string;
  /** A virtualenv (host dir) to bind read-only at VENV_MOUNT. */
  venvDir?: string;
  /** Share the host network namespace (default: a new, empty one). */
  network: boolean;
  /** Modules the slot imports before forking calls. */
  preload: readonly string[];
  /** Default size of a call's work dir (tmpfs). */
  workBytes: number;
  /** Host Node binary to bind read-only at /opt/node/bin/node (TypeScript/JavaScript tools). */
  node?: string;
  /** Host dir holding a node_modules tree, bound read-only at /opt/npm. */
  npmDir?: string;
}

/** bwrap arguments of one warm slot. The slot is pid 1 with CAP_SYS_ADMIN in its own user namespace only. */
export function slotArgs(l: SandboxLayout): string[] {
  const a = ['--unshare-all', ...(l.network ? ['--share-net'] : []), '--die-with-parent', '--new-session', '--as-pid-1', '--cap-add', 'CAP_SYS_ADMIN'];
  a.push('--hostname', 'toolplane', '--ro-bind', '/usr', '/usr');
  for (const [link, target] of [
    ['/bin', 'usr/bin'],
    ['/sbin', 'usr/sbin'],
    ['/lib', 'usr/lib'],
    ['/lib64', 'usr/lib64'],
    ['/lib32', 'usr/lib32'],
  ] as const) {
    if (existsSync(link)) a.push('--symlink', target, link);
  }
  for (const f of ['/etc/ssl', '/etc/ca-certificates', '/etc/localtime', '/etc/ld.so.cache', '/etc/alternatives', '/etc/mime.types']) a.push('--ro-bind-try', f, f);
  if (l.network) for (const f of ['/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/gai.conf']) a.push('--ro-bind-try', f, f);
  a.push('--ro-bind', l.supportDir, SUPPORT_MOUNT);
  a.push('--ro-bind', path.join(l.supportDir, 'passwd'), '/etc/passwd', '--ro-bind', path.join(l.supportDir, 'group'), '/etc/group');
  if (l.venvDir) a.push('--ro-bind', l.venvDir, VENV_MOUNT);
  if (l.node) a.push('--ro-bind', l.node, '/opt/node/bin/node');
  if (l.npmDir) a.push('--ro-bind', l.npmDir, '/opt/npm');
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--chdir', '/', '--clearenv');
  a.push('--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'TOOLPLANE_SECCOMP', `${SUPPORT_MOUNT}/seccomp.bpf`, '--setenv', 'TOOLPLANE_PRELOAD', l.preload.join(','));
  a.push('--setenv', 'TOOLPLANE_WORK_BYTES', String(l.workBytes));
  a.push('--remount-ro', '/', '--', l.python, '-I', '-B', '-u', `${SUPPORT_MOUNT}/slot.py`);
  return a;
}

/**
 * Arguments of a one-shot sandbox (venv builds): the same system mounts, no slot; `writable` (host
 * dir) bound read-write at `writableAt`, `readable` dirs read-only at their own paths.
 */
export function oneShotArgs(opts: { supportDir: string; network: boolean; writable?: string; writableAt?: string; readable?: string[]; command: string[] }): string[] {
  const a = ['--unshare-all', ...(opts.network ? ['--share-net'] : []), '--die-with-parent', '--new-session', '--ro-bind', '/usr', '/usr'];
  for (const [link, target] of [
    ['/bin', 'usr/bin'],
    ['/sbin', 'usr/sbin'],
    ['/lib', 'usr/lib'],
    ['/lib64', 'usr/lib64'],
  ] as const) {
    if (existsSync(link)) a.push('--symlink', target, link);
  }
  for (const f of ['/etc/ssl', '/etc/ca-certificates', '/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/ld.so.cache', '/etc/alternatives']) {
    a.push('--ro-bind-try', f, f);
  }
  a.push('--ro-bind', path.join(opts.supportDir, 'passwd'), '/etc/passwd', '--ro-bind', path.join(opts.supportDir, 'group'), '/etc/group');
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp'); // before the binds: they may live under /tmp
  for (const r of opts.readable ?? []) a.push('--ro-bind', r, r);
  if (opts.writable) a.push('--bind', opts.writable, opts.writableAt ?? opts.writable);
  a.push('--chdir', '/tmp', '--clearenv', '--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'HOME', '/tmp');
  a.push('--', ...opts.command);
  return a;
}

/**
 * Writes the support dir `<workRoot>/support-<digest>` (0755, files 0644): the slot and harness
 * scripts, the seccomp program and a minimal passwd/group. The digest covers every file, so a
 * new version never mixes with an old one.
 */
export async function prepareSupportDir(workRoot: string, seccompProgram: Buffer, uid: number, gid: number): Promise<string> {
  const files: Record<string, Buffer> = {
    'slot.py': await fs.readFile(path.join(PYTHON_DIR, 'slot.py')),
    'harness.py': await fs.readFile(path.join(PYTHON_DIR, 'harness.py')),
    'node_harness.cjs': await fs.readFile(path.join(PYTHON_DIR, 'node_harness.cjs')),
    'seccomp.bpf': seccompProgram,
    passwd: Buffer.from(`root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${uid}:${gid}:toolplane sandbox:/tmp:/usr/sbin/nologin\n`),
    group: Buffer.from(`root:x:0:\nsandbox:x:${gid}:\n`),
  };
  const digest = createHash('sha256');
  for (const [name, body] of Object.entries(files)) digest.update(name).update('\0').update(body);
  const dir = path.join(workRoot, `support-${digest.digest('hex').slice(0, 16)}`);
  if (existsSync(path.join(dir, '.complete'))) return dir;
  const temp = `${dir}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await fs.mkdir(temp, { recursive: true, mode: 0o755 });
  await fs.chmod(temp, 0o755);
  for (const [name, body] of Object.entries(files)) await fs.writeFile(path.join(temp, name), body, { mode: 0o644 });
  await fs.writeFile(path.join(temp, '.complete'), '', { mode: 0o644 });
  try {
    await fs.rename(temp, dir);
  } catch {
    await fs.rm(temp, { recursive: true, force: true }); // another runner made it first
  }
  return dir;
}

export const SECCOMP_GENERATOR = path.join(PYTHON_DIR, 'seccomp_gen.py');
