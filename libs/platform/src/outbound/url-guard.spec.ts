import { ErrorCode } from '@toolplane/contracts';
import { request } from 'node:http';
import { classifyAddress as classify } from '../egress-policy';
import { EgressRefused, UrlGuard } from './url-guard';

describe('UrlGuard', () => {
  const dns: Record<string, string[]> = {
    'mcp.example.com': ['93.184.216.34'],
    'sneaky.example.com': ['93.184.216.34', '10.0.0.7'],
    'internal.corp': ['10.1.2.3'],
  };
  const resolve = async (host: string) => dns[host] ?? [];
  const refusedCode = async (p: Promise<void>) =>
    p.then(
      () => 'allowed',
      (e: { code: string }) => e.code,
    );
  const production = new UrlGuard({ profile: 'production', allowed: [], resolve });
  const development = new UrlGuard({ profile: 'development', allowed: [], resolve });

  it('classifies internal ranges, IPv4-mapped IPv6 included', () => {
    expect(classify('127.0.0.1')).toBe('loopback');
    expect(classify('::1')).toBe('loopback');
    expect(classify('169.254.169.254')).toBe('metadata');
    expect(classify('::ffff:10.0.0.1')).toBe('private');
    expect(classify('fd00:ec2::254')).toBe('metadata');
    expect(classify('0.0.0.0')).toBe('unspecified');
    expect(classify('8.8.8.8')).toBeNull();
  });

  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    // The ranges one of the two former guards missed: the strictest list holds for every user.
    '192.0.0.192',
    '198.18.0.1',
    '240.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
  ])('refuses %s in production', (ip) => {
    expect(() => production.checkAddress(ip)).toThrow(EgressRefused);
  });

  it('allows public addresses in production', () => {
    expect(() => production.checkAddress('93.184.215.14')).not.toThrow();
    expect(() => production.checkAddress('2606:2800:21f:cb07:6820:80da:af6b:8b2c')).not.toThrow();
  });

  it('in production refuses loopback, private, link-local (metadata) and any name resolving to one', async () => {
    for (const url of [
      'http://127.0.0.1:3000/mcp',
      'http://[::1]/mcp',
      'http://169.254.169.254/latest',
      'http://internal.corp/mcp',
      'https://sneaky.example.com/mcp',
    ]) {
      expect([url, await refusedCode(production.check(url))]).toEqual([url, ErrorCode.EGRESS_REFUSED]);
    }
    expect(await refusedCode(production.check('https://mcp.example.com/mcp'))).toBe('allowed');
    expect(await refusedCode(production.check('file:///etc/passwd'))).toBe(ErrorCode.EGRESS_REFUSED);
    // A name with no address at all is not "nothing to refuse".
    expect(await refusedCode(production.check('https://unknown.example.com/mcp'))).toBe(ErrorCode.FETCH_FAILED);
  });

  it('carries the codes and the allowlist setting its user gives it', async () => {
    const sut = new UrlGuard({
      profile: 'production',
      allowed: [],
      resolve,
      allowlistSetting: 'MCP_ALLOWED_HOSTS',
      codes: { refused: ErrorCode.MCP_URL_REFUSED, unresolved: ErrorCode.MCP_CONNECTION_FAILED },
    });
    await expect(sut.check('http://internal.corp/')).rejects.toMatchObject({
      code: ErrorCode.MCP_URL_REFUSED,
      message: expect.stringContaining('allow it with MCP_ALLOWED_HOSTS'),
    });
    expect(await refusedCode(sut.check('https://unknown.example.com/mcp'))).toBe(ErrorCode.MCP_CONNECTION_FAILED);
  });

  it('vetHost returns the addresses to pin: the literal itself, or every answer (an allowlisted name too)', async () => {
    const sut = new UrlGuard({ profile: 'production', allowed: ['internal.corp'], resolve });
    expect(await sut.vetHost('[2606:4700::1111]')).toEqual(['2606:4700::1111']);
    expect(await sut.vetHost('MCP.example.com')).toEqual(['93.184.216.34']);
    expect(await sut.vetHost('internal.corp')).toEqual(['10.1.2.3']);
  });

  it('allows loopback in development and nothing else private; allowlisted hosts and CIDRs anywhere, only those', async () => {
    expect(await refusedCode(development.check('http://127.0.0.1:3000/mcp'))).toBe('allowed');
    expect(() => development.checkAddress('::1')).not.toThrow();
    expect(() => development.checkAddress('10.0.0.1')).toThrow(EgressRefused);
    expect(await refusedCode(development.check('http://169.254.169.254/'))).toBe(ErrorCode.EGRESS_REFUSED);
    const sut = new UrlGuard({ profile: 'production', allowed: ['internal.corp', '10.0.0.0/24'], resolve });
    expect(await refusedCode(sut.check('http://internal.corp/mcp'))).toBe('allowed');
    expect(await refusedCode(sut.check('http://10.0.0.9/mcp'))).toBe('allowed');
    expect(await refusedCode(sut.check('http://10.0.1.9/mcp'))).toBe(ErrorCode.EGRESS_REFUSED);
  });

  it('refuses http in production and credentials in the URL when told to; literal private hosts by URL', () => {
    const strict = new UrlGuard({
      profile: 'production',
      allowed: [],
      allowHttp: false,
      allowUserinfo: false,
      httpSetting: 'CREDENTIALS_WEBHOOK_ALLOW_HTTP',
    });
    const strictDev = new UrlGuard({ profile: 'development', allowed: [], allowHttp: false });
    expect(() => strict.parse(new URL('http://example.com/hook'))).toThrow(
      /http:\/\/ is refused in production .*CREDENTIALS_WEBHOOK_ALLOW_HTTP/,
    );
    expect(() => strictDev.parse(new URL('http://127.0.0.1:9/hook'))).not.toThrow();
    expect(() => strict.parse(new URL('https://user:pw@example.com/'))).toThrow(/credentials in the URL/);
    expect(() => production.parse(new URL('https://user:pw@example.com/'))).not.toThrow();
    expect(() => strict.parse(new URL('https://[::1]/'))).toThrow(EgressRefused);
  });

  it('its lookup refuses a name resolving to a refused address before the socket connects', async () => {
    const err = await new Promise<unknown>((res) => {
      const req = request({ host: 'localhost', port: 9, path: '/', lookup: production.lookup }, () => res('connected'));
      req.on('error', res);
      req.end();
    });
    expect(err).toBeInstanceOf(EgressRefused);
    expect((err as EgressRefused).code).toBe(ErrorCode.EGRESS_REFUSED);
  });
});
