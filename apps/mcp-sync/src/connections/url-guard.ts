import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { classifyAddress, EgressPolicy } from '@toolplane/platform';
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export interface UrlGuardOptions {
  profile: 'development' | 'production';
  /** Host names, IPs or CIDRs reachable even though they are internal. */
  allowed: string[];
  resolve?: (host: string) => Promise<string[]>;
}

/**
 * SSRF rules for server URLs: the one egress policy of Toolplane (@toolplane/platform's
 * EgressPolicy: private, loopback, link-local and metadata, CGNAT, multicast and other reserved
 * addresses, IPv4 and IPv6 in every written form) unless allowlisted; development also allows
 * loopback. Every resolved address must pass. `check` only answers yes or no; the HTTP requests
 * themselves go through a PinnedHttp (pinned-http.ts), which connects only to the addresses
 * `vetHost` returned, so a name cannot resolve to something else between the check and the connect.
 */
export class UrlGuard {
  private readonly allowedHosts = new Set<string>();
  private readonly policy: EgressPolicy;
  private readonly resolve: (host: string) => Promise<string[]>;

  constructor(private readonly opts: UrlGuardOptions) {
    const nets: string[] = [];
    for (const a of opts.allowed) {
      if (isIP(a.split('/')[0]!)) nets.push(a);
      else this.allowedHosts.add(a.toLowerCase());
    }
    this.policy = new EgressPolicy({ allow: nets });
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
      const why = this.policy.refusal(address);
      if (!why || (this.opts.profile === 'development' && classifyAddress(address) === 'loopback')) continue;
      throw refused(where, `${host} resolves to ${why} (${address}); allow it with MCP_ALLOWED_HOSTS`);
    }
    return addresses;
  }
}

function refused(where: string, why: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.MCP_URL_REFUSED, `Refusing to connect to ${where}: ${why}`, { url: where });
}
