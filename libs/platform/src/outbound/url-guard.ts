import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { classifyAddress, EgressPolicy } from '../egress-policy';

export interface UrlGuardOptions {
  profile: 'development' | 'production';
  /**
   * The operator's allowlist: host names, IPs or CIDRs reachable even though they are internal
   * (an allowlisted name is not checked; a CIDR lets every address in it through).
   */
  allowed: readonly string[];
  /** Production: allow http:// (development always does). Default true. */
  allowHttp?: boolean;
  /** Allow `user:password@` in URLs. Default true. */
  allowUserinfo?: boolean;
  /** The setting an operator changes to let a refused target through, named in refusals (e.g. `MCP_ALLOWED_HOSTS`). */
  allowlistSetting?: string;
  /** The setting that allows http:// in production, named when it is refused. */
  httpSetting?: string;
  /** The codes refusals and unresolvable names carry. Default EGRESS_REFUSED / FETCH_FAILED. */
  codes?: { refused: ErrorCode; unresolved: ErrorCode };
  /** Name resolution (tests inject one); default: every address getaddrinfo answers. */
  resolve?: (host: string) => Promise<string[]>;
}

/**
 * A target the SSRF policy refused: nothing was sent to it. A ToolplaneError carrying the code its
 * guard was built with; `reason` says why, without anything but the target and its address class.
 */
export class EgressRefused extends ToolplaneError {
  constructor(
    code: ErrorCode,
    readonly where: string,
    readonly reason: string,
    details: Record<string, unknown> = { url: where },
  ) {
    super(code, `Refusing to connect to ${where}: ${reason}`, details, false);
    this.name = 'EgressRefused';
  }
}

/**
 * The one SSRF rule set of Toolplane for outbound HTTP made on a tenant's behalf (credentials
 * webhooks, MCP servers and their OAuth endpoints, fetch_webpage): http(s) only, every address a
 * target resolves to judged by the one egress policy (@toolplane/platform's EgressPolicy: private,
 * loopback, link-local and metadata, CGNAT, multicast, benchmarking and other reserved addresses,
 * IPv4 and IPv6 in every written form) unless the operator allowlisted it; development also allows
 * loopback. The guard only decides; connections go through a PinnedHttp (or this guard's `lookup`),
 * which connect only to the addresses `vetHost` returned, so a name cannot resolve to something else
 * between the check and the connect.
 */
export class UrlGuard {
  private readonly allowedHosts = new Set<string>();
  private readonly policy: EgressPolicy;
  private readonly resolve: (host: string) => Promise<string[]>;
  private readonly codes: { refused: ErrorCode; unresolved: ErrorCode };

  constructor(private readonly opts: UrlGuardOptions) {
    const nets: string[] = [];
    for (const a of opts.allowed) {
      if (isIP(a.split('/')[0]!)) nets.push(a);
      else this.allowedHosts.add(a.toLowerCase());
    }
    this.policy = new EgressPolicy({ allow: nets });
    this.resolve =
      opts.resolve ?? (async (host) => (await lookup(host, { all: true, verbatim: true })).map((r) => r.address));
    this.codes = opts.codes ?? { refused: ErrorCode.EGRESS_REFUSED, unresolved: ErrorCode.FETCH_FAILED };
  }

  /** parse, then vetHost: the URL is allowed if every address its host resolves to is. */
  async check(rawUrl: string | URL): Promise<void> {
    const url = this.parse(rawUrl);
    await this.vetHost(url.hostname, url.origin);
  }

  /**
   * The URL if its scheme is http or https (and, per the options, no http:// in production, no
   * userinfo), with a literal IP host judged already; a refusal otherwise.
   */
  parse(rawUrl: string | URL): URL {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw this.refused(String(rawUrl), 'not a URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw this.refused(url.origin === 'null' ? url.protocol : url.origin, `scheme ${url.protocol} is not allowed`);
    if (url.protocol === 'http:' && this.opts.profile === 'production' && this.opts.allowHttp === false) {
      throw this.refused(
        url.origin,
        `http:// is refused in production (use https${this.opts.httpSetting ? `, or set ${this.opts.httpSetting}` : ''})`,
      );
    }
    if ((url.username || url.password) && this.opts.allowUserinfo === false)
      throw this.refused(url.origin, 'credentials in the URL are not allowed');
    const host = bare(url.hostname);
    if (isIP(host)) this.checkAddress(host, url.origin);
    return url;
  }

  /**
   * The addresses a connection to `hostname` may use: the literal itself for an IP, else every
   * address the name resolves to (one lookup), each checked against the policy (an allowlisted
   * name is not checked). A refusal when one is not allowed, the `unresolved` code when the name
   * does not resolve.
   */
  async vetHost(hostname: string, where: string = hostname): Promise<string[]> {
    const host = bare(hostname);
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else {
      try {
        addresses = await this.resolve(host);
      } catch (e) {
        throw new ToolplaneError(
          this.codes.unresolved,
          `Cannot resolve ${host}: ${(e as Error).message}`,
          { host },
          { cause: e },
        );
      }
      if (addresses.length === 0)
        throw new ToolplaneError(this.codes.unresolved, `Cannot resolve ${host}: no address`, { host });
    }
    if (this.allowedHosts.has(host)) return addresses;
    for (const address of addresses) {
      if (!isIP(address)) throw this.refused(where, `${host} resolved to ${address}, not an IP address`);
      const why = this.refusal(address);
      if (why)
        throw this.refused(where, `${host === address ? 'it' : host} resolves to ${why} (${address})${this.hint()}`);
    }
    return addresses;
  }

  /** Refuses one address the policy does not allow. */
  checkAddress(address: string, where: string = address): void {
    const why = this.refusal(bare(address));
    if (why) throw this.refused(where, `address ${address} is ${why}${this.hint()}`);
  }

  /**
   * A `lookup` for node:http(s).request / net.connect: resolves with getaddrinfo and refuses (with
   * this guard's refusal as the socket's error) if any address is not allowed. The socket connects
   * to the address judged, so a changing DNS answer cannot slip through.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const cb = callback as (e: Error | null, a?: string | LookupAddress[], f?: number) => void;
    const o = options as { family?: number; all?: boolean };
    dnsLookup(hostname, { all: true, family: o.family ?? 0 }, (err, addrs) => {
      if (err) return cb(err);
      const host = bare(hostname);
      if (!this.allowedHosts.has(host)) {
        for (const a of addrs) {
          const why = this.refusal(a.address);
          if (why) return cb(this.refused(host, `${host} resolves to ${why} (${a.address})${this.hint()}`));
        }
      }
      if (o.all) return cb(null, addrs);
      cb(null, addrs[0]!.address, addrs[0]!.family);
    });
  };

  private refusal(address: string): string | undefined {
    if (this.opts.profile === 'development' && isIP(address) && classifyAddress(address) === 'loopback')
      return undefined;
    return this.policy.refusal(address) ?? undefined;
  }

  private hint(): string {
    return this.opts.allowlistSetting ? `; allow it with ${this.opts.allowlistSetting}` : '';
  }

  private refused(where: string, why: string): EgressRefused {
    return new EgressRefused(this.codes.refused, where, why);
  }
}

/** A host name as pins and allowlists key it: no IPv6 brackets, lower case. */
export function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase();
}
