import {
  classifyAddress,
  EgressPolicy,
  formatAddress,
  InvalidCidrError,
  parseAddress,
  parseCidr,
} from './egress-policy';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fec0::1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['224.0.0.251', 'multicast'],
    ['ff02::1', 'multicast'],
    ['192.0.2.7', 'documentation'],
    ['2001:db8::1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['255.255.255.255', 'reserved'],
    ['2001:0:4136:e378::1', 'reserved'], // Teredo
    ['100::1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'], // IPv4-mapped, dotted
    ['::ffff:7f00:1', 'loopback'], // IPv4-mapped, hex
    ['::ffff:169.254.169.254', 'metadata'],
    ['::10.0.0.1', 'private'], // IPv4-compatible
    ['64:ff9b::10.0.0.1', 'private'], // NAT64 well-known prefix
    ['64:ff9b::a9fe:a9fe', 'metadata'], // NAT64 of 169.254.169.254
    ['64:ff9b:1::1', 'private'], // local-use NAT64
    ['2002:c0a8:0101::1', 'private'], // 6to4 of 192.168.1.1
    ['[::ffff:10.0.0.1]', 'private'], // bracketed, as in a URL
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ])('%s is public', (address) => {
    expect(classifyAddress(address)).toBeNull();
  });

  it('refuses what is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(InvalidCidrError);
  });
});

describe('EgressPolicy', () => {
  it('refuses internal addresses with their category, allows public ones', () => {
    const sut = new EgressPolicy();
    expect(sut.refusal('10.0.0.1')).toBe('a private address');
    expect(sut.refusal('169.254.169.254')).toBe('a metadata address');
    expect(sut.refusal('::ffff:127.0.0.1')).toBe('a loopback address');
    expect(sut.refusal('8.8.8.8')).toBeUndefined();
    expect(sut.refusal('not-an-ip')).toBe('not an IP address');
  });

  it('lets allowlisted ranges through, in either IPv4 or IPv6 form', () => {
    const sut = new EgressPolicy({ allow: ['10.20.0.0/16', '192.0.2.2', 'fd00:1::/64'] });
    expect(sut.refusal('10.20.3.4')).toBeUndefined();
    expect(sut.refusal('::ffff:10.20.3.4')).toBeUndefined();
    expect(sut.refusal('64:ff9b::10.20.3.4')).toBeUndefined();
    expect(sut.refusal('192.0.2.2')).toBeUndefined();
    expect(sut.refusal('192.0.2.3')).toBe('a documentation address');
    expect(sut.refusal('10.21.0.1')).toBe('a private address');
    expect(sut.refusal('fd00:1::5')).toBeUndefined();
    expect(sut.refusal('fd00:2::5')).toBe('a private address');
  });

  it('lists its ranges for enforcement below the socket API', () => {
    const v4 = new EgressPolicy().ranges(4).map((r) => r.cidr.text);
    expect(v4).toEqual(
      expect.arrayContaining([
        '10.0.0.0/8',
        '127.0.0.0/8',
        '169.254.0.0/16',
        '100.64.0.0/10',
        '224.0.0.0/4',
        '169.254.169.254/32',
        '168.63.129.16/32',
      ]),
    );
    expect(new EgressPolicy().ranges(6).map((r) => r.cidr.text)).toEqual(
      expect.arrayContaining(['::1/128', 'fc00::/7', 'fe80::/10', '::ffff:0:0/96', '64:ff9b::/96']),
    );
  });

  it('rejects a malformed allowlist entry with a typed error', () => {
    expect(() => new EgressPolicy({ allow: ['10.0.0.0/33'] })).toThrow(InvalidCidrError);
    expect(() => new EgressPolicy({ allow: ['intranet'] })).toThrow(InvalidCidrError);
  });
});

describe('parseCidr / formatAddress', () => {
  it('normalizes the network address and prints canonical text', () => {
    expect(parseCidr('10.1.2.3/8').text).toBe('10.0.0.0/8');
    expect(parseCidr('fd00:0:0:0:0:0:0:1/16').text).toBe('fd00::/16');
    expect(parseCidr('::ffff:1.2.3.4').text).toBe('::ffff:102:304/128');
    expect(formatAddress(6, parseAddress('2001:db8:0:0:1:0:0:1')!.value)).toBe('2001:db8::1:0:0:1');
  });
});
