import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';

import { SLIRP_DNS, type Route } from './network';
import { slotFds } from './slot';

/** Where the sandbox sees the support files (slot.py, harness.py, confine.py, netconf.py, seccomp.bpf, passwd, group, resolv.conf, hosts). */
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
  /**
   * Network-enabled slot: its own network namespace attached through slirp4netns, with these
   * egress routes (undefined: an empty namespace, loopback only).
   */
  network?: readonly Route[];
  /** Number of cgroup.procs fds the slot receives (from fd 5). */
  cgroupFds?: number;
  /** Size of each call's /dev/shm (tmpfs). */
  shmBytes?: number;
  /** Modules the slot imports before forking calls. */
  preload: readonly string[];
  /** Default size of a call's work dir (tmpfs). */
  workBytes: number;
  /** Host Node binary to bind read-only at /opt/node/bin/node (TypeScript/JavaScript tools). */
  node?: string;
  /** Host dir holding a node_modules tree, bound read-only at /opt/npm. */
  npmDir?: string;
}

/** Namespaces of every sandbox: all of them, and no user namespace can be made inside (on top of the seccomp filter). */
const UNSHARE = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session'];

/**
 * bwrap arguments of one warm slot. The slot is pid 1 with CAP_SYS_ADMIN (its mounts, and for a
 * network-enabled slot its own network namespace) and CAP_NET_ADMIN (its routes) in its own user
 * namespace only; its children drop every capability.
 */
export function slotArgs(l: SandboxLayout): string[] {
  const fds = slotFds(l.cgroupFds ?? 0, l.network !== undefined);
  const a = [
    ...UNSHARE,
    '--as-pid-1',
    '--cap-add',
    'CAP_SYS_ADMIN',
    ...(l.network ? ['--cap-add', 'CAP_NET_ADMIN', '--info-fd', String(fds.info)] : []),
  ];
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
  for (const f of [
    '/etc/ssl',
    '/etc/ca-certificates',
    '/etc/localtime',
    '/etc/ld.so.cache',
    '/etc/alternatives',
    '/etc/mime.types',
  ])
    a.push('--ro-bind-try', f, f);
  if (l.network) {
    // slirp4netns answers DNS on 10.0.2.3; the host's resolver and hosts file are not the sandbox's.
    a.push(
      '--ro-bind',
      path.join(l.supportDir, 'resolv.conf'),
      '/etc/resolv.conf',
      '--ro-bind',
      path.join(l.supportDir, 'hosts'),
      '/etc/hosts',
    );
    for (const f of ['/etc/nsswitch.conf', '/etc/gai.conf']) a.push('--ro-bind-try', f, f);
  }
  a.push('--ro-bind', l.supportDir, SUPPORT_MOUNT);
  a.push(
    '--ro-bind',
    path.join(l.supportDir, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    path.join(l.supportDir, 'group'),
    '/etc/group',
  );
  if (l.venvDir) a.push('--ro-bind', l.venvDir, VENV_MOUNT);
  if (l.node) a.push('--ro-bind', l.node, '/opt/node/bin/node');
  if (l.npmDir) a.push('--ro-bind', l.npmDir, '/opt/npm');
  // /dev: the usual device nodes, read-only; the slot mounts each call's /tmp and /dev/shm.
  a.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/dev', '--tmpfs', '/tmp', '--chdir', '/', '--clearenv');
  a.push(
    '--setenv',
    'PATH',
    SANDBOX_PATH,
    '--setenv',
    'TOOLPLANE_SECCOMP',
    `${SUPPORT_MOUNT}/seccomp.bpf`,
    '--setenv',
    'TOOLPLANE_PRELOAD',
    l.preload.join(','),
  );
  a.push(
    '--setenv',
    'TOOLPLANE_WORK_BYTES',
    String(l.workBytes),
    '--setenv',
    'TOOLPLANE_SHM_BYTES',
    String(l.shmBytes ?? l.workBytes),
  );
  if (fds.cgroup.length) a.push('--setenv', 'TOOLPLANE_CGROUP_FDS', fds.cgroup.join(','));
  if (l.network)
    a.push('--setenv', 'TOOLPLANE_NET', JSON.stringify(l.network), '--setenv', 'TOOLPLANE_NET_GO_FD', String(fds.go));
  a.push('--remount-ro', '/', '--', l.python, '-I', '-B', '-u', `${SUPPORT_MOUNT}/slot.py`);
  return a;
}

/** Fds of a one-shot sandbox with network: bwrap's info fd, "namespace made" (confine.py writes one byte), "network attached" (one byte from the runner). */
export const ONE_SHOT_FDS = { info: 3, made: 4, go: 5 } as const;

/**
 * Arguments of a one-shot sandbox (package builds): the same system mounts, no slot; `writable`
 * (host dir) bound read-write at `writableAt`, `readable` dirs read-only at their own paths. The
 * command runs under python/confine.py: the tool seccomp filter, no capabilities, no new
 * privileges, no further user namespaces, and either an empty network namespace or (`network`)
 * one of its own attached through slirp4netns with these routes and `hosts` as /etc/hosts.
 */
export function oneShotArgs(opts: {
  supportDir: string;
  network?: { routes: readonly Route[]; hostsFile: string };
  writable?: string;
  writableAt?: string;
  readable?: string[];
  /** More bwrap arguments (binds) before the command. */
  extra?: string[];
  chdir?: string;
  /**
   * A fresh tmpfs mounted after every bind, as the working directory and HOME: empty whatever
   * the binds are (a bind under /tmp leaves its mount points there). No bind may lie under it.
   */
  home?: string;
  /** Keep bwrap's own environment for the command (else it gets only PATH and HOME). bwrap must then be started with exactly the env the command may see. */
  inheritEnv?: boolean;
  /** More variables the command gets (after PATH and HOME). */
  env?: Record<string, string>;
  command: string[];
}): string[] {
  const a = [...UNSHARE];
  if (opts.network)
    a.push('--cap-add', 'CAP_SYS_ADMIN', '--cap-add', 'CAP_NET_ADMIN', '--info-fd', String(ONE_SHOT_FDS.info));
  a.push('--ro-bind', '/usr', '/usr');
  for (const [link, target] of [
    ['/bin', 'usr/bin'],
    ['/sbin', 'usr/sbin'],
    ['/lib', 'usr/lib'],
    ['/lib64', 'usr/lib64'],
  ] as const) {
    if (existsSync(link)) a.push('--symlink', target, link);
  }
  for (const f of ['/etc/ssl', '/etc/ca-certificates', '/etc/nsswitch.conf', '/etc/ld.so.cache', '/etc/alternatives'])
    a.push('--ro-bind-try', f, f);
  if (opts.network)
    a.push(
      '--ro-bind',
      path.join(opts.supportDir, 'resolv.conf'),
      '/etc/resolv.conf',
      '--ro-bind',
      opts.network.hostsFile,
      '/etc/hosts',
    );
  a.push(
    '--ro-bind',
    path.join(opts.supportDir, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    path.join(opts.supportDir, 'group'),
    '/etc/group',
  );
  a.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/dev', '--tmpfs', '/tmp'); // before the binds: they may live under /tmp
  a.push('--ro-bind', opts.supportDir, SUPPORT_MOUNT);
  for (const r of opts.readable ?? []) a.push('--ro-bind', r, r);
  if (opts.writable) a.push('--bind', opts.writable, opts.writableAt ?? opts.writable);
  a.push(...(opts.extra ?? []));
  if (opts.home) {
    const home = opts.home;
    const under = [...(opts.readable ?? []), opts.writableAt ?? opts.writable].find(
      (p) => p !== undefined && (p === home || p.startsWith(`${home}/`) || home.startsWith(`${p}/`)),
    );
    if (under) throw new Error(`The sandbox home ${home} and the bind ${under} overlap`);
    a.push('--tmpfs', home);
  }
  a.push(
    '--chdir',
    opts.chdir ?? opts.home ?? '/tmp',
    ...(opts.inheritEnv ? [] : ['--clearenv']),
    '--setenv',
    'PATH',
    SANDBOX_PATH,
    '--setenv',
    'HOME',
    opts.home ?? '/tmp',
  );
  for (const [k, v] of Object.entries(opts.env ?? {})) a.push('--setenv', k, v);
  a.push('--setenv', 'TOOLPLANE_SECCOMP', `${SUPPORT_MOUNT}/seccomp.bpf`);
  if (opts.network)
    a.push(
      '--setenv',
      'TOOLPLANE_NET',
      JSON.stringify(opts.network.routes),
      '--setenv',
      'TOOLPLANE_NET_FDS',
      `${ONE_SHOT_FDS.made},${ONE_SHOT_FDS.go}`,
    );
  a.push(
    '--remount-ro',
    '/',
    '--',
    '/usr/bin/python3',
    '-I',
    '-B',
    `${SUPPORT_MOUNT}/confine.py`,
    '--',
    ...opts.command,
  );
  return a;
}

/**
 * Writes the support dir `<workRoot>/support-<digest>` (0755, files 0644): the slot and harness
 * scripts, the seccomp program and a minimal passwd/group. The digest covers every file, so a
 * new version never mixes with an old one.
 */
export async function prepareSupportDir(
  workRoot: string,
  seccompProgram: Buffer,
  uid: number,
  gid: number,
): Promise<string> {
  const files: Record<string, Buffer> = {
    'slot.py': await fs.readFile(path.join(PYTHON_DIR, 'slot.py')),
    'harness.py': await fs.readFile(path.join(PYTHON_DIR, 'harness.py')),
    'confine.py': await fs.readFile(path.join(PYTHON_DIR, 'confine.py')),
    'confinement.py': await fs.readFile(path.join(PYTHON_DIR, 'confinement.py')),
    'netconf.py': await fs.readFile(path.join(PYTHON_DIR, 'netconf.py')),
    'node_harness.cjs': await fs.readFile(path.join(PYTHON_DIR, 'node_harness.cjs')),
    'seccomp.bpf': seccompProgram,
    'resolv.conf': Buffer.from(`nameserver ${SLIRP_DNS}\n`),
    hosts: Buffer.from('127.0.0.1 localhost\n::1 localhost\n'),
    passwd: Buffer.from(
      `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${uid}:${gid}:toolplane sandbox:/tmp:/usr/sbin/nologin\n`,
    ),
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
