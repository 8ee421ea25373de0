import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { EgressPolicy } from '@toolplane/platform';

/**
 * Network of network-enabled sandboxes (part of the isolation policy). Each such sandbox has a
 * network namespace of its own (made by the sandbox, never the runner's), reaching the outside
 * only through a user-mode network stack — slirp4netns on tap0, the approach of rootless
 * Podman/Docker: the sandbox's packets become ordinary sockets of the slirp4netns process, which
 * runs with no capability, in a mount namespace of its own and under its own seccomp filter.
 * `--disable-host-loopback` keeps 10.0.2.2 from reaching the host's loopback. Inside, the egress
 * policy becomes routes (python/netconf.py): `prohibit` for every refused range (connect()
 * fails at once with EACCES) and routes through the gateway for allowlisted ones.
 */
export interface Route {
  dst: string;
  type: 'prohibit' | 'gateway';
}

/** slirp4netns's fixed addresses on tap0 (its defaults). */
export const SLIRP_GATEWAY = '10.0.2.2';
export const SLIRP_DNS = '10.0.2.3';

/** Routes of a network-enabled call: everything the policy refuses is prohibited, the rest goes out. */
export function egressRoutes(policy: EgressPolicy): Route[] {
  const routes: Route[] = [];
  const allowedV4 = policy.allowed.filter((c) => c.family === 4 && c.prefix > 0);
  for (const c of allowedV4) routes.push({ dst: c.text, type: 'gateway' });
  const seen = new Set<string>();
  for (const { cidr } of policy.ranges(4)) {
    if (seen.has(cidr.text)) continue;
    seen.add(cidr.text);
    // A refused range inside an allowlisted one is not refused; a smaller allowlisted range inside
    // a refused one wins by its longer prefix.
    if (
      allowedV4.some(
        (a) => a.prefix <= cidr.prefix && cidr.base >> BigInt(32 - a.prefix) === a.base >> BigInt(32 - a.prefix),
      )
    )
      continue;
    routes.push({ dst: cidr.text, type: 'prohibit' });
  }
  routes.push({ dst: `${SLIRP_GATEWAY}/32`, type: 'prohibit' }); // the host's loopback through slirp
  routes.push({ dst: '::/0', type: 'prohibit' }); // slirp4netns carries IPv4 only: no IPv6 egress
  return routes;
}

/** Routes of a package build: nothing but the pinned addresses of the package index (no DNS: the names are pinned in /etc/hosts). */
export function pinnedRoutes(addresses: readonly string[]): Route[] {
  return [
    ...addresses.filter((a) => !a.includes(':')).map((a) => ({ dst: `${a}/32`, type: 'gateway' as const })),
    { dst: '0.0.0.0/1', type: 'prohibit' },
    { dst: '128.0.0.0/1', type: 'prohibit' },
    { dst: `${SLIRP_GATEWAY}/32`, type: 'prohibit' },
    { dst: `${SLIRP_DNS}/32`, type: 'prohibit' },
    { dst: '::/0', type: 'prohibit' },
  ];
}

export interface SlirpOptions {
  slirpPath: string;
  /** The runner is root: slirp4netns enters the namespace directly and sandboxes itself (new mount namespace, capabilities dropped). */
  root: boolean;
  /** Offer slirp's DNS forwarder at 10.0.2.3 (off for builds: their names are pinned). */
  dns: boolean;
}

export interface SlirpHandle {
  readonly proc: ChildProcess;
  stop(): void;
}

export class NetworkAttachError extends Error {}

/**
 * Attaches slirp4netns to the network namespace of `pid` (a sandbox process that made its own)
 * and resolves once tap0 is configured. It lives until `stop()` or until the sandbox is gone.
 */
export function attachSlirp(pid: number, o: SlirpOptions, timeoutMs = 10_000): Promise<SlirpHandle> {
  const args = [
    '--configure',
    '--mtu=65520',
    '--disable-host-loopback',
    '--enable-seccomp',
    '--ready-fd=3',
    '--exit-fd=4',
  ];
  if (o.root) args.push('--enable-sandbox');
  else args.push(`--userns-path=/proc/${pid}/ns/user`);
  if (!o.dns) args.push('--disable-dns');
  args.push('--netns-type=path', `/proc/${pid}/ns/net`, 'tap0');
  return new Promise((resolve, reject) => {
    const proc = spawn(o.slirpPath, args, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-2000)));
    const [, , , ready, exitPipe] = proc.stdio as [unknown, unknown, Readable, Readable, NodeJS.WritableStream];
    for (const s of [ready, exitPipe, proc.stderr!]) (s as Readable).on?.('error', () => undefined);
    const handle: SlirpHandle = {
      proc,
      stop: () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      },
    };
    const timer = setTimeout(() => fail(`slirp4netns did not configure the network within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string): void => {
      clearTimeout(timer);
      handle.stop();
      reject(
        new NetworkAttachError(
          `${why}: ${
            err
              .split('\n')
              .filter((l) => l && !/^WARNING|^\*|^Starting/.test(l))
              .slice(-3)
              .join(' ') || 'no message'
          }`,
        ),
      );
    };
    ready.once('data', () => {
      clearTimeout(timer);
      resolve(handle);
    });
    proc.once('error', (e) => fail(`slirp4netns could not start (${e.message})`));
    proc.once('exit', (code, sig) => fail(`slirp4netns exited (${sig ?? code})`));
  });
}
