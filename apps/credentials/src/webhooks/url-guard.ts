import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Why a webhook address is refused (never includes anything but the address class). */
export class AddressRefused extends Error {
  readonly code = 'EADDRREFUSED';
}

const V4_BLOCKED: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (incl. 100.100.100.200, Alibaba metadata)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (incl. 169.254.169.254, cloud metadata)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (incl. 192.0.0.192, Oracle metadata)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
const V6_BLOCKED: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (incl. fd00:ec2::254, AWS metadata over IPv6)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
];

export interface UrlGuardOptions {
  profile: 'development' | 'production';
  /** CIDRs allowed even though they are in a blocked range. */
  allowedCidrs: string[];
  /** Production: allow http:// (development always does). */
  allowHttp: boolean;
}

/**
 * SSRF policy for webhook URLs. Production refuses private, loopback, link-local, metadata and
 * other special-purpose addresses unless allowlisted; development also allows loopback. Host
 * names are checked on the addresses they resolve to, at connect time (so a DNS answer that
 * changes after the check cannot slip through).
 */
export class UrlGuard {
  private readonly blocked = new BlockList();
  private readonly allowed = new BlockList();
  private readonly loopback = new BlockList();

  constructor(private readonly opts: UrlGuardOptions) {
    for (const [a, p] of V4_BLOCKED) this.blocked.addSubnet(a, p, 'ipv4');
    for (const [a, p] of V6_BLOCKED) this.blocked.addSubnet(a, p, 'ipv6');
    this.loopback.addSubnet('127.0.0.0', 8, 'ipv4');
    this.loopback.addAddress('::1', 'ipv6');
    for (const cidr of opts.allowedCidrs) {
      const [addr, bits] = cidr.split('/') as [string, string];
      const family = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
      this.allowed.addSubnet(addr, Number(bits), family);
    }
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
    let ip = address;
    let family: 'ipv4' | 'ipv6' = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) {
      ip = mapped[1]!;
      family = 'ipv4';
    }
    if (this.allowed.check(ip, family)) return undefined;
    if (this.opts.profile === 'development' && this.loopback.check(ip, family)) return undefined;
    if (this.blocked.check(ip, family)) return 'private, loopback, link-local, metadata or reserved (allowlist it in CREDENTIALS_WEBHOOK_ALLOWED_CIDRS)';
    if (family === 'ipv6' && !/^[23]/.test(ip.replace(/^0+/, ''))) return 'not a global unicast IPv6 address';
    return undefined;
  }
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
