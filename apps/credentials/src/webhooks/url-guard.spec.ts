import { AddressRefused, UrlGuard } from './url-guard';

describe('UrlGuard', () => {
  const production = new UrlGuard({ profile: 'production', allowedCidrs: [], allowHttp: false });
  const development = new UrlGuard({ profile: 'development', allowedCidrs: [], allowHttp: false });

  it.each(['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.100.100.200', '0.0.0.0', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:169.254.169.254'])(
    'refuses %s in production',
    (ip) => {
      expect(() => production.checkAddress(ip)).toThrow(AddressRefused);
    },
  );

  it('allows public addresses in production', () => {
    expect(() => production.checkAddress('93.184.215.14')).not.toThrow();
    expect(() => production.checkAddress('2606:2800:21f:cb07:6820:80da:af6b:8b2c')).not.toThrow();
  });

  it('allows loopback in development, and nothing else private', () => {
    expect(() => development.checkAddress('127.0.0.1')).not.toThrow();
    expect(() => development.checkAddress('::1')).not.toThrow();
    expect(() => development.checkAddress('10.0.0.1')).toThrow(AddressRefused);
    expect(() => development.checkAddress('169.254.169.254')).toThrow(AddressRefused);
  });

  it('allows an allowlisted range in production, only that range', () => {
    const sut = new UrlGuard({ profile: 'production', allowedCidrs: ['10.8.0.0/16'], allowHttp: false });
    expect(() => sut.checkAddress('10.8.3.4')).not.toThrow();
    expect(() => sut.checkAddress('10.9.0.1')).toThrow(AddressRefused);
  });

  it('refuses http, credentials in the URL and literal private hosts by URL', async () => {
    expect(() => production.checkUrl(new URL('http://example.com/hook'))).toThrow(/http:\/\/ webhooks are refused in production/);
    expect(() => development.checkUrl(new URL('http://127.0.0.1:9/hook'))).not.toThrow();
    expect(() => production.checkUrl(new URL('https://user:pw@example.com/'))).toThrow(/credentials in the URL/);
    expect(() => production.checkUrl(new URL('https://[::1]/'))).toThrow(AddressRefused);
    await expect(production.checkResolved(new URL('https://localhost/'))).rejects.toThrow(AddressRefused);
  });
});
