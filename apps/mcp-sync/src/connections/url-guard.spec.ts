import { ErrorCode } from '@toolplane/contracts';
import { classifyAddress as classify } from '@toolplane/platform';
import { UrlGuard } from './url-guard';

describe('UrlGuard', () => {
  const dns: Record<string, string[]> = { 'mcp.example.com': ['93.184.216.34'], 'sneaky.example.com': ['93.184.216.34', '10.0.0.7'], 'internal.corp': ['10.1.2.3'] };
  const resolve = async (host: string) => dns[host] ?? [];
  const refusedCode = async (p: Promise<void>) => p.then(() => 'allowed', (e: { code: string }) => e.code);

  it('classifies internal ranges, IPv4-mapped IPv6 included', () => {
    expect(classify('127.0.0.1')).toBe('loopback');
    expect(classify('::1')).toBe('loopback');
    expect(classify('169.254.169.254')).toBe('metadata');
    expect(classify('::ffff:10.0.0.1')).toBe('private');
    expect(classify('fd00:ec2::254')).toBe('metadata');
    expect(classify('0.0.0.0')).toBe('unspecified');
    expect(classify('8.8.8.8')).toBeNull();
  });

  it('in production refuses loopback, private, link-local (metadata) and any name resolving to one', async () => {
    const sut = new UrlGuard({ profile: 'production', allowed: [], resolve });
    for (const url of ['http://127.0.0.1:3000/mcp', 'http://[::1]/mcp', 'http://169.254.169.254/latest', 'http://internal.corp/mcp', 'https://sneaky.example.com/mcp']) {
      expect([url, await refusedCode(sut.check(url))]).toEqual([url, ErrorCode.MCP_URL_REFUSED]);
    }
    expect(await refusedCode(sut.check('https://mcp.example.com/mcp'))).toBe('allowed');
    expect(await refusedCode(sut.check('file:///etc/passwd'))).toBe(ErrorCode.MCP_URL_REFUSED);
    // A name with no address at all is not "nothing to refuse".
    expect(await refusedCode(sut.check('https://unknown.example.com/mcp'))).toBe(ErrorCode.MCP_CONNECTION_FAILED);
  });

  it('vetHost returns the addresses to pin: the literal itself, or every answer (an allowlisted name too)', async () => {
    const sut = new UrlGuard({ profile: 'production', allowed: ['internal.corp'], resolve });
    expect(await sut.vetHost('[2606:4700::1111]')).toEqual(['2606:4700::1111']);
    expect(await sut.vetHost('MCP.example.com')).toEqual(['93.184.216.34']);
    expect(await sut.vetHost('internal.corp')).toEqual(['10.1.2.3']);
  });

  it('allows loopback in development, and allowlisted hosts and CIDRs anywhere', async () => {
    const dev = new UrlGuard({ profile: 'development', allowed: [], resolve });
    expect(await refusedCode(dev.check('http://127.0.0.1:3000/mcp'))).toBe('allowed');
    expect(await refusedCode(dev.check('http://169.254.169.254/'))).toBe(ErrorCode.MCP_URL_REFUSED);
    const sut = new UrlGuard({ profile: 'production', allowed: ['internal.corp', '10.0.0.0/24'], resolve });
    expect(await refusedCode(sut.check('http://internal.corp/mcp'))).toBe('allowed');
    expect(await refusedCode(sut.check('http://10.0.0.9/mcp'))).toBe('allowed');
    expect(await refusedCode(sut.check('http://10.0.1.9/mcp'))).toBe(ErrorCode.MCP_URL_REFUSED);
  });
});
