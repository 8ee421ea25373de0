import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export interface UrlGuardOptions {
  profile: 'development' | 'production';
  /** Host names, IPs or CIDRs reachable even though they are internal. */
  allowed: string[];
  resolve?: (host: string) => Promise<string[]>;
}

type Kind = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast';

const ranges: Array<[Kind, string, number, 'ipv4' | 'ipv6']> = [
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['loopback', '::1', 128, 'ipv6'],
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['private', '100.64.0.0', 10, 'ipv4'],
  ['private', 'fc00::', 7, 'ipv6'],
  // Link-local holds the cloud metadata endpoints (169.254.169.254, fd00:ec2::254 is in fc00::/7).
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];
const lists = new Map<Kind, BlockList>();
for (const [kind, net, prefix, family] of ranges) {
  const list = lists.get(kind) ?? new BlockList();
  list.addSubnet(net, prefix, family);
  lists.set(kind, list);
}

/** The internal range an address belongs to, or null for a public address. */
export function classify(address: string): Kind | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const ip = mapped ? mapped[1]! : address;
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  for (const [kind, list] of lists) if (list.check(ip, family)) return kind;
  return null;
}

/**
 * SSRF rules for server URLs: in production, private, loopback, link-local (cloud metadata),
 * unspecified and multicast addresses are refused unless allowlisted; development also allows
 * loopback. Every resolved address must pass. `check` only answers yes or no; the HTTP requests
 * themselves go through a PinnedHttp (pinned-http.ts), which connects only to the addresses
 * `vetHost` returned, so a name cannot resolve to something else between the check and the connect.
 */
export class UrlGuard {
  private readonly allowedHosts = new Set<string>();
  private readonly allowedNets = new BlockList();
  private readonly resolve: (host: string) => Promise<string[]>;

  constructor(private readonly opts: UrlGuardOptions) {
    for (const a of opts.allowed) {
      const [net, prefix] = a.split('/');
      if (isIP(net!)) this.allowedNets.addSubnet(net!, Number(prefix ?? (isIP(net!) === 6 ? 128 : 32)), isIP(net!) === 6 ? 'ipv6' : 'ipv4');
      else this.allowedHosts.add(a.toLowerCase());
    }
    this.resolve = opts.resolve ?? (async (host) => (await lookup(host, { all: true, verbatim: true })).map((r) => r.address));
  }

  async check(rawUrl: string): Promise<void> {
    const url = this.parse(rawUrl);
    await this.vetHost(url.hostname, url.origin);
  }

  /** The URL if its scheme is http or https; MCP_URL_REFUSED otherwise. */
  parse(rawUrl: string | URL): URL {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw refused(String(rawUrl), 'not a URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused(url.origin, `scheme ${url.protocol} is not allowed`);
    return url;
  }

  /**
   * The addresses a connection to `hostname` may use: the literal itself for an IP, else every
   * address the name resolves to (one lookup), each checked against the policy (an allowlisted
   * name is not checked). MCP_URL_REFUSED when one is not allowed, MCP_CONNECTION_FAILED when the
   * name does not resolve.
   */
  async vetHost(hostname: string, where: string = hostname): Promise<string[]> {
    const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else {
      try {
        addresses = await this.resolve(host);
      } catch (e) {
        throw new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `Cannot resolve ${host}: ${(e as Error).message}`, { host });
      }
      if (addresses.length === 0) throw new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, `Cannot resolve ${host}: no address`, { host });
    }
    if (this.allowedHosts.has(host)) return addresses;
    for (const address of addresses) {
      if (!isIP(address)) throw refused(where, `${host} resolved to ${address}, not an IP address`);
      const kind = classify(address);
      if (kind === null || this.allowedNets.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')) continue;
      if (kind === 'loopback' && this.opts.profile === 'development') continue;
      throw refused(where, `${host} resolves to a ${kind} address (${address}); allow it with MCP_ALLOWED_HOSTS`);
    }
    return addresses;
  }
}

function refused(where: string, why: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.MCP_URL_REFUSED, `Refusing to connect to ${where}: ${why}`, { url: where });
}
