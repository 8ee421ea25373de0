import { classifyAddress, EgressPolicy } from '@toolplane/platform';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/** Why a webhook address is refused (never includes anything but the address class). */
export class AddressRefused extends Error {
  readonly code = 'EADDRREFUSED';
}

export interface UrlGuardOptions {
  profile: 'development' | 'production';
  /** CIDRs allowed even though they are in a blocked range. */
  allowedCidrs: string[];
  /** Production: allow http:// (development always does). */
  allowHttp: boolean;
}

/**
 * SSRF policy for webhook URLs: the one egress policy of Toolplane (@toolplane/platform's
 * EgressPolicy: private, loopback, link-local, metadata, CGNAT, multicast and other reserved
 * addresses, IPv4 and IPv6 in every written form) unless allowlisted; development also allows
 * loopback. Host
 * names are checked on the addresses they resolve to, at connect time (so a DNS answer that
 * changes after the check cannot slip through).
 */
export class UrlGuard {
  private readonly policy: EgressPolicy;

  constructor(private readonly opts: UrlGuardOptions) {
    this.policy = new EgressPolicy({ allow: opts.allowedCidrs });
  }

  /** Scheme and literal-address checks on a URL; throws AddressRefused. */
  checkUrl(url: URL): void {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressRefused(`scheme ${url.protocol} is not allowed`);
    if (url.protocol === 'http:' && this.opts.profile === 'production' && !this.opts.allowHttp) {
      throw new AddressRefused('http:// webhooks are refused in production (use https, or set CREDENTIALS_WEBHOOK_ALLOW_HTTP)');
    }
    if (url.username || url.password) throw new AddressRefused('credentials in the URL are not allowed (use the signing secret)');
    const host = hostOf(url);
    if (isIP(host)) this.checkAddress(host);
  }

  /** checkUrl, then every address the host resolves to. */
  async checkResolved(url: URL): Promise<void> {
    this.checkUrl(url);
    const host = hostOf(url);
    if (isIP(host)) return;
    const addrs = await new Promise<LookupAddress[]>((res, rej) => dnsLookup(host, { all: true }, (e, a) => (e ? rej(new AddressRefused(`host ${host} does not resolve (${e.code})`)) : res(a))));
    for (const a of addrs) this.checkAddress(a.address);
  }

  checkAddress(address: string): void {
    const reason = this.refusal(address);
    if (reason) throw new AddressRefused(`address ${address} is ${reason}`);
  }

  /** A `lookup` for http.request: resolves, refuses if any address is not allowed. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: (options as { family?: number }).family ?? 0 }, (err, addrs) => {
      if (err) return (callback as (e: Error) => void)(err);
      for (const a of addrs) {
        const reason = this.refusal(a.address);
        if (reason) return (callback as (e: Error) => void)(new AddressRefused(`${hostname} resolves to ${a.address}, which is ${reason}`));
      }
      if ((options as { all?: boolean }).all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addrs);
      (callback as (e: null, a: string, f: number) => void)(null, addrs[0]!.address, addrs[0]!.family);
    });
  };

  private refusal(address: string): string | undefined {
    if (this.opts.profile === 'development' && isIP(address) && classifyAddress(address) === 'loopback') return undefined;
    const why = this.policy.refusal(address);
    return why && `${why} (allowlist it in CREDENTIALS_WEBHOOK_ALLOWED_CIDRS)`;
  }
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
