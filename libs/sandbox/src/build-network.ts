import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { promises as fs } from 'node:fs';
import { isIP } from 'node:net';
import * as path from 'node:path';
import type { EgressPolicy } from '@toolplane/platform';
import { attachSlirp, pinnedRoutes, type Route, type SlirpHandle, type SlirpOptions } from './network';

/** The network of one package build: only the package index's addresses, pinned. */
export interface BuildNetwork {
  routes: Route[];
  /** /etc/hosts of the build: the index's names and their pinned addresses. */
  hostsFile: string;
  attach: (pid: number) => Promise<SlirpHandle>;
  release(): Promise<void>;
}

/** The network a build needs to reach these URLs, or undefined when it needs none. */
export type BuildNetworkFor = (urls: readonly string[]) => Promise<BuildNetwork | undefined>;

export class BuildNetworkRefused extends Error {}

/**
 * Pins the hosts of `urls` to the IPv4 addresses they resolve to now, each checked against the
 * egress policy (an index on an internal address must be allowlisted like any destination), and
 * gives the build routes to those addresses only: no DNS, nothing else.
 */
export function buildNetworkFor(o: {
  policy: EgressPolicy;
  slirp?: SlirpOptions;
  tmpDir: string;
  resolve?: (host: string) => Promise<string[]>;
}): BuildNetworkFor {
  const resolve =
    o.resolve ?? (async (host: string) => (await lookup(host, { all: true, family: 4 })).map((a) => a.address));
  return async (urls) => {
    const hosts = [...new Set(urls.map((u) => new URL(u).hostname.replace(/^\[(.*)\]$/, '$1')))];
    if (hosts.length === 0) return undefined;
    if (!o.slirp)
      throw new BuildNetworkRefused(
        `the build needs the package index (${hosts.join(', ')}) but this runner has no user-mode network (slirp4netns is not installed)`,
      );
    const pins: Array<[string, string]> = [];
    for (const host of hosts) {
      let addresses: string[];
      if (isIP(host)) addresses = [host];
      else {
        try {
          addresses = (await resolve(host)).filter((a) => isIP(a) === 4);
        } catch (e) {
          throw new BuildNetworkRefused(`the package index host ${host} does not resolve: ${(e as Error).message}`);
        }
      }
      if (addresses.length === 0) throw new BuildNetworkRefused(`the package index host ${host} has no IPv4 address`);
      for (const a of addresses) {
        const why = o.policy.refusal(a);
        if (why)
          throw new BuildNetworkRefused(
            `the package index host ${host} resolves to ${a}, ${why}: allowlist it in RUNNER_EGRESS_ALLOW to build from it`,
          );
        pins.push([a, host]);
      }
    }
    await fs.mkdir(o.tmpDir, { recursive: true, mode: 0o755 });
    const hostsFile = path.join(o.tmpDir, `hosts-${randomBytes(6).toString('hex')}`);
    await fs.writeFile(hostsFile, `127.0.0.1 localhost\n${pins.map(([a, h]) => `${a} ${h}`).join('\n')}\n`, {
      mode: 0o644,
    });
    return {
      routes: pinnedRoutes([...new Set(pins.map(([a]) => a))]),
      hostsFile,
      attach: (pid) => attachSlirp(pid, { ...o.slirp!, dns: false }),
      release: () => fs.rm(hostsFile, { force: true }),
    };
  };
}
