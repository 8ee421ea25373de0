import { isIP } from 'node:net';

/**
 * The one outbound-address policy of Toolplane (SSRF / egress): which addresses an outbound
 * connection made on behalf of a tenant may reach. Everything that is not globally reachable is
 * refused — loopback, unspecified, private (RFC 1918, IPv6 unique-local and site-local), carrier-
 * grade NAT, link-local, cloud metadata endpoints, multicast, documentation, benchmarking and
 * reserved ranges — in IPv4 and IPv6, including IPv4 addresses written in IPv6 form (mapped
 * `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), which are judged
 * by the IPv4 address they carry. An operator's allowlist (CIDRs) lets chosen ranges through.
 *
 * No Nest, no I/O: callers resolve names themselves and judge every address they will connect to
 * (the webhook client, MCP connections, the runner's sandbox routes and package-index pins).
 */
export type AddressCategory =
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'carrier-grade NAT'
  | 'link-local'
  | 'metadata'
  | 'multicast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

export interface Cidr {
  family: 4 | 6;
  /** The network address as an integer (32 or 128 bits). */
  base: bigint;
  prefix: number;
  /** Canonical text, e.g. `10.0.0.0/8`, `fc00::/7`. */
  text: string;
}

export class InvalidCidrError extends Error {}

const V4_RANGES: Array<[string, AddressCategory]> = [
  // Metadata first: the most specific answer wins (169.254.169.254 is also link-local).
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OCI, OpenStack
  ['169.254.170.2/32', 'metadata'], // AWS ECS task metadata
  ['168.63.129.16/32', 'metadata'], // Azure wire server (a public address)
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'], // 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // incl. 255.255.255.255
];
const V6_RANGES: Array<[string, AddressCategory]> = [
  ['fd00:ec2::254/128', 'metadata'], // AWS over IPv6
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'private'], // local-use NAT64 (RFC 8215)
  ['100::/64', 'reserved'], // discard
  ['2001::/32', 'reserved'], // Teredo (carries an obfuscated IPv4 address)
  ['2001:db8::/32', 'documentation'],
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'], // site-local (deprecated)
  ['ff00::/8', 'multicast'],
];
const V4_RULES = V4_RANGES.map(([c, cat]) => [parseCidr(c), cat] as const);
const V6_RULES = V6_RANGES.map(([c, cat]) => [parseCidr(c), cat] as const);
/** IPv6 prefixes whose last 32 bits are an IPv4 address, judged as that address. */
const EMBEDS_V4_LOW = [parseCidr('::ffff:0:0/96'), parseCidr('::/96'), parseCidr('64:ff9b::/96')];
const SIX_TO_FOUR = parseCidr('2002::/16');
const GLOBAL_UNICAST_V6 = parseCidr('2000::/3');

/** An IP address (v4 or v6 text, IPv6 zone ignored) as {family, value}; undefined if not an IP. */
export function parseAddress(text: string): { family: 4 | 6; value: bigint } | undefined {
  const address = text.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const v = isIP(address);
  if (v === 4) return { family: 4, value: v4ToBigint(address) };
  if (v === 6) return { family: 6, value: v6ToBigint(address) };
  return undefined;
}

/** `a.b.c.d/n`, `x:y::/n` or a bare address (= /32, /128). Throws InvalidCidrError. */
export function parseCidr(text: string): Cidr {
  const [addr = '', bits, extra] = text.trim().split('/');
  const ip = parseAddress(addr);
  if (!ip || extra !== undefined) throw new InvalidCidrError(`${JSON.stringify(text)} is not an IP address or CIDR`);
  const width = ip.family === 4 ? 32 : 128;
  const prefix = bits === undefined ? width : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width || (bits !== undefined && !/^\d+$/.test(bits))) {
    throw new InvalidCidrError(`${JSON.stringify(text)}: the prefix length must be 0–${width}`);
  }
  const base = ip.value & mask(width, prefix);
  return { family: ip.family, base, prefix, text: `${formatAddress(ip.family, base)}/${prefix}` };
}

export function cidrContains(c: Cidr, family: 4 | 6, value: bigint): boolean {
  const width = family === 4 ? 32 : 128;
  return c.family === family && (value & mask(width, c.prefix)) === c.base;
}

/** The category of a non-public address, or null for a globally reachable one. */
export function classifyAddress(address: string): AddressCategory | null {
  const ip = parseAddress(address);
  if (!ip) throw new InvalidCidrError(`${JSON.stringify(address)} is not an IP address`);
  return classify(ip.family, ip.value);
}

function classify(family: 4 | 6, value: bigint): AddressCategory | null {
  if (family === 4) {
    for (const [c, cat] of V4_RULES) if (cidrContains(c, 4, value)) return cat;
    return null;
  }
  for (const [c, cat] of V6_RULES) if (cidrContains(c, 6, value)) return cat;
  for (const c of EMBEDS_V4_LOW)
    if (cidrContains(c, 6, value))
      return classify(4, value & 0xffffffffn) ?? (c === EMBEDS_V4_LOW[1] ? 'reserved' : null);
  if (cidrContains(SIX_TO_FOUR, 6, value)) return classify(4, (value >> 80n) & 0xffffffffn);
  if (!cidrContains(GLOBAL_UNICAST_V6, 6, value)) return 'reserved';
  return null;
}

export interface EgressPolicyOptions {
  /** CIDRs (or single addresses) reachable even though they are in a refused range. */
  allow?: readonly string[];
}

/**
 * The policy with an operator's allowlist. `refusal(address)` says why an address may not be
 * reached (undefined: it may); `ranges()` gives the refused and allowed CIDRs for enforcement
 * below the socket API (the runner turns them into routes of a sandbox's network namespace).
 */
export class EgressPolicy {
  readonly allowed: readonly Cidr[];

  constructor(opts: EgressPolicyOptions = {}) {
    this.allowed = (opts.allow ?? []).map(parseCidr);
  }

  /** Why `address` is refused ("a private address", …), or undefined when it may be reached. */
  refusal(address: string): string | undefined {
    const ip = parseAddress(address);
    if (!ip) return 'not an IP address';
    // An IPv4 address written in IPv6 form is allowlisted (or not) as the IPv4 address it is.
    const v4 = ip.family === 6 ? embeddedV4(ip.value) : undefined;
    const candidates: Array<[4 | 6, bigint]> =
      v4 !== undefined
        ? [
            [6, ip.value],
            [4, v4],
          ]
        : [[ip.family, ip.value]];
    if (this.allowed.some((c) => candidates.some(([f, v]) => cidrContains(c, f, v)))) return undefined;
    const category = classify(ip.family, ip.value);
    return category ? `${/^[aeiou]/.test(category) ? 'an' : 'a'} ${category} address` : undefined;
  }

  /** Every refused range, most specific first, with its category. */
  ranges(family: 4 | 6): Array<{ cidr: Cidr; category: AddressCategory }> {
    const rules =
      family === 4
        ? V4_RULES
        : [...V6_RULES, ...EMBEDS_V4_LOW.map((c) => [c, 'reserved'] as const), [SIX_TO_FOUR, 'reserved'] as const];
    return rules.map(([cidr, category]) => ({ cidr, category }));
  }
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
function embeddedV4(value: bigint): bigint | undefined {
  for (const c of EMBEDS_V4_LOW) if (cidrContains(c, 6, value)) return value & 0xffffffffn;
  if (cidrContains(SIX_TO_FOUR, 6, value)) return (value >> 80n) & 0xffffffffn;
  return undefined;
}

function mask(width: number, prefix: number): bigint {
  return prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(width - prefix);
}

function v4ToBigint(a: string): bigint {
  return a.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBigint(a: string): bigint {
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) becomes its two hex groups first.
  const text = a
    .toLowerCase()
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, b1: string, b2: string, b3: string, b4: string) => {
      const hex = (x: string, y: string) => ((Number(x) << 8) | Number(y)).toString(16);
      return `${hex(b1, b2)}:${hex(b3, b4)}`;
    });
  const [head = '', rest] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const groups =
    rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
}

export function formatAddress(family: 4 | 6, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - i * 16)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups (RFC 5952).
  let best = [-1, 0];
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best[1]! && j - i > 1) best = [i, j - i];
    i = j;
  }
  if (best[0]! < 0) return groups.join(':');
  return `${groups.slice(0, best[0]).join(':')}::${groups.slice(best[0]! + best[1]!).join(':')}`;
}
