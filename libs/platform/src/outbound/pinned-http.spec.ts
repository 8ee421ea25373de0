import { ErrorCode } from '@toolplane/contracts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PinnedHttp } from './pinned-http';
import { UrlGuard } from './url-guard';

/** A plain HTTP server on one loopback address that records who connected and with which Host. */
interface Recorder {
  server: Server;
  hits: Array<{ path: string; host: string | undefined; remote: string | undefined }>;
}

async function listen(
  address: string,
  port: number,
  handler?: (path: string, res: import('node:http').ServerResponse) => boolean,
): Promise<Recorder> {
  const rec: Recorder = { server: undefined as unknown as Server, hits: [] };
  rec.server = createServer((req, res) => {
    rec.hits.push({ path: req.url ?? '', host: req.headers.host, remote: req.socket.remoteAddress });
    if (handler?.(req.url ?? '', res)) return;
    // A fresh socket per request: every request goes through connect (and lookup) again.
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end(`from ${address}`);
  });
  await new Promise<void>((resolve, reject) => rec.server.once('error', reject).listen(port, address, () => resolve()));
  return rec;
}

const close = (r: Recorder) => new Promise<void>((resolve) => r.server.close(() => resolve()));
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (e: { code?: string }) => e.code ?? String(e),
  );

describe('PinnedHttp (SSRF pinning: no DNS rebinding)', () => {
  // "public" stands in for a public address: 127.0.0.1 is allowlisted as a CIDR in production;
  // 127.0.0.2 is plain loopback there (refused), and listens on the same port to catch a leak.
  let pub: Recorder;
  let internal: Recorder;
  let port: number;
  const redirectTo = new Map<string, string>();
  const opened: PinnedHttp[] = [];

  beforeAll(async () => {
    pub = await listen('127.0.0.1', 0, (path, res) => {
      const to = redirectTo.get(path);
      if (!to) return false;
      res.writeHead(302, { location: to, connection: 'close' }).end();
      return true;
    });
    port = (pub.server.address() as AddressInfo).port;
    internal = await listen('127.0.0.2', port);
  });
  afterAll(async () => {
    await Promise.all(opened.map((h) => h.close()));
    await Promise.all([close(pub), close(internal)]);
  });
  beforeEach(() => {
    pub.hits.length = 0;
    internal.hits.length = 0;
  });

  /** A resolver answering from `answers[host]` in turn (the last answer repeats), counting its calls. */
  function rebinding(answers: Record<string, string[][]>) {
    const calls: string[] = [];
    const resolve = async (host: string) => {
      calls.push(host);
      const list = answers[host];
      if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      const n = calls.filter((h) => h === host).length;
      return list[Math.min(n, list.length) - 1]!;
    };
    return { calls, resolve };
  }

  function pinned(resolve: (host: string) => Promise<string[]>, ttlMs?: number): PinnedHttp {
    const guard = new UrlGuard({ profile: 'production', allowed: ['127.0.0.1/32'], resolve });
    const http = new PinnedHttp(guard, ttlMs === undefined ? {} : { ttlMs });
    opened.push(http);
    return http;
  }

  it('resolves a host once, then connects every new socket only to the vetted address although DNS now answers loopback', async () => {
    const dns = rebinding({ 'mcp.rebind.test': [['127.0.0.1'], ['127.0.0.2']] });
    const http = pinned(dns.resolve);
    for (let i = 0; i < 5; i++) {
      const res = await http.fetch(`http://mcp.rebind.test:${port}/call/${i}`);
      expect(await res.text()).toBe('from 127.0.0.1');
    }
    expect(dns.calls).toEqual(['mcp.rebind.test']);
    // Where every socket went, not how many there were: the HTTP client may open a spare socket
    // or retry one that a loaded box closed late. Each of the five requests reached the vetted
    // address, and every connection made went there, with the name (not the IP) as its Host.
    expect([...new Set(pub.hits.map((h) => h.path))].sort()).toEqual([0, 1, 2, 3, 4].map((i) => `/call/${i}`));
    expect(new Set(pub.hits.map((h) => h.remote))).toEqual(new Set(['127.0.0.1']));
    expect(new Set(pub.hits.map((h) => h.host))).toEqual(new Set([`mcp.rebind.test:${port}`]));
    expect(internal.hits).toEqual([]);
    expect(http.pinned('mcp.rebind.test')).toEqual(['127.0.0.1']);
  });

  it('re-resolving after the pin expires vets the new answer: a rebind to loopback or metadata is refused, never connected', async () => {
    for (const rebound of ['127.0.0.2', '169.254.169.254']) {
      const dns = rebinding({ 'mcp.rebind.test': [['127.0.0.1'], [rebound]] });
      const http = pinned(dns.resolve, 0);
      expect(await (await http.fetch(`http://mcp.rebind.test:${port}/first`)).text()).toBe('from 127.0.0.1');
      expect(await codeOf(http.fetch(`http://mcp.rebind.test:${port}/second`))).toBe(ErrorCode.EGRESS_REFUSED);
      expect(dns.calls).toEqual(['mcp.rebind.test', 'mcp.rebind.test']);
      // The pins still hold only the vetted address: the lookup a socket would use cannot yield the rebound one.
      expect(http.pinned('mcp.rebind.test')).toEqual(['127.0.0.1']);
    }
    expect(pub.hits.map((h) => h.path)).toEqual(['/first', '/first']);
    expect(internal.hits).toEqual([]);
  });

  it('refuses a name with any internal address among its answers, before connecting', async () => {
    const dns = rebinding({
      'mixed.rebind.test': [['127.0.0.1', '169.254.169.254']],
      'meta.rebind.test': [['169.254.169.254']],
    });
    const http = pinned(dns.resolve);
    expect(await codeOf(http.fetch(`http://mixed.rebind.test:${port}/`))).toBe(ErrorCode.EGRESS_REFUSED);
    expect(await codeOf(http.vet(`http://meta.rebind.test:${port}/`))).toBe(ErrorCode.EGRESS_REFUSED);
    expect(await codeOf(http.fetch(`http://nowhere.rebind.test:${port}/`))).toBe(ErrorCode.FETCH_FAILED);
    expect(http.pinned('mixed.rebind.test')).toEqual([]);
    expect(pub.hits).toEqual([]);
  });

  it('IP-literal URLs need no lookup and are checked as they are', async () => {
    const dns = rebinding({});
    const http = pinned(dns.resolve);
    expect(await (await http.fetch(`http://127.0.0.1:${port}/literal`)).text()).toBe('from 127.0.0.1');
    expect(await codeOf(http.fetch(`http://127.0.0.2:${port}/literal`))).toBe(ErrorCode.EGRESS_REFUSED);
    expect(await codeOf(http.fetch(`http://[::ffff:169.254.169.254]:${port}/`))).toBe(ErrorCode.EGRESS_REFUSED);
    expect(await codeOf(http.fetch('file:///etc/passwd'))).toBe(ErrorCode.EGRESS_REFUSED);
    expect(dns.calls).toEqual([]);
    expect(internal.hits).toEqual([]);
  });

  it('a followed redirect cannot escape the pinning: a new host is vetted (once), a refused one is never connected', async () => {
    const dns = rebinding({
      'mcp.rebind.test': [['127.0.0.1']],
      'other.rebind.test': [['127.0.0.1'], ['127.0.0.2']],
      'evil.rebind.test': [['127.0.0.2']],
    });
    const http = pinned(dns.resolve);
    redirectTo.set('/to-literal', `http://127.0.0.2:${port}/leak`);
    redirectTo.set('/to-evil', `http://evil.rebind.test:${port}/leak`);
    redirectTo.set('/to-other', `http://other.rebind.test:${port}/ok`);
    redirectTo.set('/to-metadata', 'http://169.254.169.254/latest/meta-data/');
    for (const path of ['/to-literal', '/to-evil', '/to-metadata']) {
      expect([path, await codeOf(http.fetch(`http://mcp.rebind.test:${port}${path}`))]).toEqual([
        path,
        ErrorCode.EGRESS_REFUSED,
      ]);
    }
    for (let i = 0; i < 2; i++)
      expect(await (await http.fetch(`http://mcp.rebind.test:${port}/to-other`)).text()).toBe('from 127.0.0.1');
    expect(dns.calls.sort()).toEqual(['evil.rebind.test', 'mcp.rebind.test', 'other.rebind.test']);
    expect(pub.hits.filter((h) => h.path === '/ok').map((h) => h.host)).toEqual([
      `other.rebind.test:${port}`,
      `other.rebind.test:${port}`,
    ]);
    expect(internal.hits).toEqual([]);
    // A manual redirect (what the SDK transports ask for) comes back unfollowed.
    const manual = await http.fetch(`http://mcp.rebind.test:${port}/to-evil`, { redirect: 'manual' });
    expect([manual.status, manual.headers.get('location')]).toEqual([302, `http://evil.rebind.test:${port}/leak`]);
  });

  it('concurrent first requests share one lookup; development allows loopback; an allowlisted name is pinned too', async () => {
    const dns = rebinding({ 'mcp.rebind.test': [['127.0.0.2']], 'intranet.test': [['127.0.0.2']] });
    const dev = new PinnedHttp(new UrlGuard({ profile: 'development', allowed: [], resolve: dns.resolve }));
    opened.push(dev);
    const bodies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => dev.fetch(`http://mcp.rebind.test:${port}/c/${i}`).then((r) => r.text())),
    );
    expect(new Set(bodies)).toEqual(new Set(['from 127.0.0.2']));
    expect(dns.calls).toEqual(['mcp.rebind.test']);
    const prod = new PinnedHttp(
      new UrlGuard({ profile: 'production', allowed: ['intranet.test'], resolve: dns.resolve }),
      { ttlMs: 0 },
    );
    opened.push(prod);
    expect(await (await prod.fetch(`http://intranet.test:${port}/a`)).text()).toBe('from 127.0.0.2');
    // Allowlisted names skip the policy, not the pinning: the connection goes where the answer said.
    expect(prod.pinned('intranet.test')).toEqual(['127.0.0.2']);
  });
});
