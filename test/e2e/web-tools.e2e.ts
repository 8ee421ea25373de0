import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import { expectEventually } from '@toolplane/testing';
import { startExaFake, type ExaFake } from '../../tools/fakes/exa/exa-fake';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';

/**
 * web-tools' internal subjects called as the executor calls them (sealed as the executor): fetch_webpage
 * against a local site this test serves (the SSRF policy in production: only 127.0.0.1 is allowlisted,
 * so 127.0.0.2 stands in for an internal address), and web_search against the Exa fake through the
 * unmodified exa-js SDK.
 */
describe('web-tools: fetch_webpage and web_search', () => {
  const prefix = `${testPrefix()}web`;
  const org = uniqueOrg('web');
  const EXA_KEY = `exa-${Math.random().toString(36).slice(2, 14)}`;
  const MAX_BYTES = 1024 * 1024;
  const TIMEOUT_MS = 8000;
  const HUGE = 50 * 1024 * 1024;
  let stack: Stack;
  let client: RawClient;
  let exa: ExaFake;
  let site: Server;
  let base: string;
  /** Listens on 127.0.0.2 (refused by the policy): counts every TCP connection it gets. */
  let internal: Server;
  let internalUrl: string;
  let internalConnections = 0;
  /** Bytes of the 50 MB body the site wrote before the reader went away. */
  let hugeSent: Promise<number>;

  const fetchPage = (url: string, exa_api_key?: string) =>
    client.req(
      'toolplane.internal.v1.web.fetch-webpage',
      { org_id: org, url, ...(exa_api_key ? { exa_api_key } : {}) },
      { timeoutMs: 60_000 },
    );
  const search = (args: Record<string, unknown>, exa_api_key: string | null = EXA_KEY) =>
    client.req(
      'toolplane.internal.v1.web.web-search',
      { org_id: org, args, ...(exa_api_key ? { exa_api_key } : {}) },
      { timeoutMs: 60_000 },
    );
  const searchesFor = (query: string) => exa.requests.filter((r) => r.path === '/search' && r.body.query === query);

  const paragraphs = Array.from(
    { length: 20 },
    (_, i) =>
      `<p>Paragraph ${i}: red foxes are small omnivores that live on every continent but Antarctica, and adapt well to towns.</p>`,
  ).join('\n');
  const ARTICLE = `<!doctype html><html><head><title>Foxes | Field notes</title>
<meta name="author" content="Vera Fox"><meta property="article:published_time" content="2026-03-04T05:06:07Z"></head>
<body><nav><a href="/">Home</a><a href="/contact">Contact us</a></nav>
<article><h1>Foxes in town</h1><p>The <strong>red fox</strong> is <a href="https://en.wikipedia.org/wiki/Red_fox">well known</a>.</p>${paragraphs}
<script>document.title = 'pwned'</script></article><footer>Cookie banner</footer></body></html>`;

  /** A one-page PDF with an info dictionary (title, author). */
  const PDF = [
    '%PDF-1.4',
    '1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj',
    '2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj',
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>endobj',
    '4 0 obj<</Length 55>>stream',
    'BT /F1 18 Tf 20 100 Td (Hello from a PDF page) Tj ET',
    'endstream endobj',
    '5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj',
    '6 0 obj<</Title(Fox census)/Author(Vera Fox)>>endobj',
    'trailer<</Root 1 0 R/Info 6 0 R>>',
    '%%EOF',
  ].join('\n');

  function route(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    switch (path) {
      case '/article':
        return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE);
      case '/plain':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('just some text');
      case '/data.json':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"fox": true}');
      case '/image.png':
        return void res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64));
      case '/paper.pdf':
        return void res.writeHead(200, { 'content-type': 'application/pdf' }).end(PDF);
      case '/broken.pdf':
        return void res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4\nnot really a pdf');
      case '/to-article':
        return void res.writeHead(302, { location: '/article' }).end();
      case '/to-internal':
        return void res.writeHead(302, { location: `${internalUrl}/secret` }).end();
      case '/to-metadata':
        return void res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      case '/to-file':
        return void res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      case '/missing':
        return void res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>');
      case '/huge-declared':
        // Says 50 MB up front: refused from the header.
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(HUGE) });
        return void res.write('<p>', () => undefined);
      case '/stall':
        // Headers and a first chunk, then nothing: only the fetch timeout ends it.
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.write('<p>start');
      case '/huge':
        return streamHuge(res);
      default:
        res.writeHead(404).end();
    }
  }

  /** 50 MB of HTML, chunked (no length), written only as fast as the reader takes it. */
  function streamHuge(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/html' });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    hugeSent = new Promise((resolve) => {
      const done = () => resolve(sent);
      res.once('close', done);
      const pump = () => {
        while (sent < HUGE) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
  }

  beforeAll(async () => {
    exa = await startExaFake({ apiKeys: [EXA_KEY] });
    site = createServer(route);
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    internal = createServer((_req, res) => res.end('internal secret'));
    internal.on('connection', () => internalConnections++);
    await new Promise<void>((r) => internal.listen(0, '127.0.0.2', () => r()));
    internalUrl = `http://127.0.0.2:${(internal.address() as AddressInfo).port}`;
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['credentials', 'web-tools'],
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        'web-tools': {
          TOOLPLANE_PROFILE: 'production',
          WEB_FETCH_ALLOWED_HOSTS: '127.0.0.1/32',
          WEB_FETCH_MAX_BYTES: String(MAX_BYTES),
          WEB_FETCH_TIMEOUT_MS: String(TIMEOUT_MS),
          EXA_BASE_URL: exa.url,
        },
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await exa?.close();
    site?.closeAllConnections();
    internal?.closeAllConnections();
    await Promise.all([site, internal].map((s) => new Promise((r) => (s ? s.close(r) : r(undefined)))));
  });
  beforeEach(() => {
    exa.fault = undefined;
  });

  describe('fetch_webpage', () => {
    it('answers an article page as markdown, with its title, author and date, without navigation or scripts', async () => {
      const r = await fetchPage(`${base}/article`);
      expect(r.error).toBeUndefined();
      expect(r.text).toMatch(/^# Foxes/);
      expect(r.text).toContain('Author: Vera Fox');
      expect(r.text).toContain('Published: 2026-03-04T05:06:07Z');
      expect(r.text).toContain(`Source: ${base}/article`);
      expect(r.text).toContain('**red fox**');
      expect(r.text).toContain('[well known](https://en.wikipedia.org/wiki/Red_fox)');
      expect(r.text).not.toContain('pwned');
      expect(r.text).not.toContain('Contact us');
    });

    it('follows an allowed redirect; reads text, JSON and PDF; refuses other content types', async () => {
      expect((await fetchPage(`${base}/to-article`)).text).toContain('**red fox**');
      expect((await fetchPage(`${base}/plain`)).text).toBe('just some text');
      expect((await fetchPage(`${base}/data.json`)).text).toBe('{"fox": true}');
      expect((await fetchPage(`${base}/image.png`)).error).toMatchObject({
        code: 'CONTENT_TYPE_UNSUPPORTED',
        details: { content_type: 'image/png' },
      });
      // A PDF: its text, under the title and author its info dictionary gives.
      const pdf = await fetchPage(`${base}/paper.pdf`);
      expect(pdf.error).toBeUndefined();
      expect(pdf.text).toContain('# Fox census');
      expect(pdf.text).toContain('Author: Vera Fox');
      expect(pdf.text).toContain('Hello from a PDF page');
      // One pdf.js cannot read is a typed failure, and the service goes on.
      expect((await fetchPage(`${base}/broken.pdf`)).error).toMatchObject({ code: 'FETCH_FAILED' });
      expect((await fetchPage(`${base}/plain`)).text).toBe('just some text');
      expect((await fetchPage(`${base}/missing`)).error).toMatchObject({
        code: 'FETCH_FAILED',
        details: { status: 404 },
      });
    });

    it('refuses a redirect to an internal address before any socket opens to it', async () => {
      // The recorder works: a direct connection is counted (so a count that stays put means something).
      const before = internalConnections;
      await new Promise<void>((resolve, reject) =>
        tcpConnect(
          { host: '127.0.0.2', port: Number(new URL(internalUrl).port) },
          function (this: import('node:net').Socket) {
            this.end();
            resolve();
          },
        ).once('error', reject),
      );
      await expectEventually(() => expect(internalConnections).toBe(before + 1));

      const seen = internalConnections;
      const r = await fetchPage(`${base}/to-internal`);
      expect(r.error).toMatchObject({ code: 'EGRESS_REFUSED' });
      expect(r.error.message).toContain('127.0.0.2');
      expect((await fetchPage(`${internalUrl}/secret`)).error).toMatchObject({ code: 'EGRESS_REFUSED' });
      expect((await fetchPage(`${base}/to-metadata`)).error).toMatchObject({ code: 'EGRESS_REFUSED' });
      expect(internalConnections).toBe(seen);
    });

    it('cuts a 50 MB body at the size cap with a typed error, without reading the rest', async () => {
      const r = await fetchPage(`${base}/huge`);
      expect(r.error).toMatchObject({ code: 'CONTENT_TOO_LARGE', details: { limit_bytes: MAX_BYTES } });
      // The site stopped writing when web-tools hung up, far short of 50 MB.
      expect(await hugeSent).toBeLessThan(HUGE / 2);
      expect((await fetchPage(`${base}/huge-declared`)).error).toMatchObject({ code: 'CONTENT_TOO_LARGE' });
    });

    it('gives up a page that stops sending at the fetch timeout with a typed error', async () => {
      expect((await fetchPage(`${base}/stall`)).error).toMatchObject({
        code: 'FETCH_TIMEOUT',
        retryable: true,
        details: { timeout_ms: TIMEOUT_MS },
      });
    });

    it.each([
      ['file:///etc/passwd', 'file'],
      ['gopher://127.0.0.1:70/1', 'gopher'],
      ['ftp://example.com/x', 'ftp'],
    ])('refuses %s with a scheme error naming the scheme', async (url, scheme) => {
      const r = await fetchPage(url);
      expect(r.error).toMatchObject({ code: 'URL_SCHEME_UNSUPPORTED', details: { scheme } });
      expect(r.error.message).toContain(scheme);
    });

    it('refuses a redirect to a file: URL with the scheme error', async () => {
      expect((await fetchPage(`${base}/to-file`)).error).toMatchObject({
        code: 'URL_SCHEME_UNSUPPORTED',
        details: { scheme: 'file' },
      });
    });

    it('with an Exa key asks Exa for the contents first; falls back to a direct fetch when Exa fails', async () => {
      const url = `${base}/article`;
      exa.pages.set(url, {
        title: 'Foxes (from Exa)',
        author: 'Exa Author',
        publishedDate: '2026-01-01',
        text: 'Exa text of the fox page',
      });
      const viaExa = await fetchPage(url, EXA_KEY);
      expect(JSON.parse(viaExa.text)).toEqual({
        title: 'Foxes (from Exa)',
        published_date: '2026-01-01',
        author: 'Exa Author',
        text: 'Exa text of the fox page',
      });
      expect(exa.requests.filter((q) => q.path === '/contents').at(-1)).toMatchObject({
        apiKey: EXA_KEY,
        body: { urls: [url], text: true },
      });
      exa.fault = 'server_error';
      const fallback = await fetchPage(url, EXA_KEY);
      expect(fallback.text).toMatch(/^# Foxes/);
      expect(fallback.text).toContain('**red fox**');
      exa.pages.delete(url);
    });
  });

  describe('web_search (exa-js against the Exa fake)', () => {
    it('maps each parameter as the reference does and answers the reference JSON', async () => {
      const query = `foxes ${uniqueOrg('q')}`;
      const r = await search({
        query,
        num_results: 3,
        category: 'news',
        include_text: true,
        include_domains: ['zoo.test'],
        exclude_domains: ['spam.test'],
        start_published_date: '2026-01-01',
        end_published_date: '2026-02-01',
        user_location: 'FR',
      });
      expect(r.error).toBeUndefined();
      const [sent] = searchesFor(query);
      expect(sent).toMatchObject({ apiKey: EXA_KEY, userAgent: expect.stringMatching(/^exa-node /) });
      expect(sent!.body).toEqual({
        query,
        numResults: 3,
        type: 'auto',
        category: 'news',
        includeDomains: ['zoo.test'],
        excludeDomains: ['spam.test'],
        startPublishedDate: '2026-01-01',
        endPublishedDate: '2026-02-01',
        userLocation: 'FR',
        contents: { text: true, highlights: { numSentences: 2, highlightsPerUrl: 3, query }, summary: { query } },
      });
      const out = JSON.parse(r.text);
      expect(out.query).toBe(query);
      expect(out.results).toHaveLength(3);
      expect(Object.keys(out.results[0]).sort()).toEqual([
        'author',
        'highlights',
        'published_date',
        'summary',
        'text',
        'title',
        'url',
      ]);
      expect(out.results[0].url).toMatch(/^https:\/\/zoo\.test\//);
      expect(out.results[0].highlights).toHaveLength(3);
    });

    it('sends no text unless asked, and no optional field the call left out', async () => {
      const query = `plain ${uniqueOrg('q')}`;
      const out = JSON.parse((await search({ query })).text);
      expect(searchesFor(query)[0]!.body).toEqual({
        query,
        numResults: 10,
        type: 'auto',
        contents: { text: false, highlights: { numSentences: 2, highlightsPerUrl: 3, query }, summary: { query } },
      });
      expect(out.results).toHaveLength(10);
      expect(out.results[0].text).toBeUndefined();
    });

    it.each([
      [0, 1],
      [-3, 1],
      [250, 100],
    ])('clamps num_results %d to %d', async (n, want) => {
      const query = `clamp ${n} ${uniqueOrg('q')}`;
      const out = JSON.parse((await search({ query, num_results: n })).text);
      expect(searchesFor(query)[0]!.body.numResults).toBe(want);
      expect(out.results).toHaveLength(want);
    });

    it('answers an empty query as the reference does, without asking Exa', async () => {
      const before = exa.requests.length;
      const r = await search({ query: '   ' });
      expect(JSON.parse(r.text)).toEqual({ error: 'Query cannot be empty', query: '   ' });
      expect(exa.requests.length).toBe(before);
    });

    it.each([
      ['unauthorized', 'Invalid API key'],
      ['rate_limited', 'rate limit'],
      ['server_error', 'Internal server error'],
      ['malformed_json', 'JSON'],
    ] as const)('answers Exa fault %s as "Search failed: …" text, never with the key', async (fault, words) => {
      exa.fault = fault;
      const query = `fault ${fault} ${uniqueOrg('q')}`;
      const r = await search({ query });
      expect(r.error).toBeUndefined();
      const out = JSON.parse(r.text);
      expect(Object.keys(out).sort()).toEqual(['error', 'query']);
      expect(out.query).toBe(query);
      expect(out.error).toMatch(/^Search failed: /);
      expect(out.error).toContain(words);
      expect(r.text).not.toContain(EXA_KEY);
      expect(searchesFor(query)).toHaveLength(1);
    });

    it('a key Exa refuses is a failed search; no key anywhere is SEARCH_NOT_CONFIGURED', async () => {
      const wrong = `exa-wrong-${Math.random().toString(36).slice(2, 10)}`;
      const refused = await search({ query: 'who am i' }, wrong);
      expect(JSON.parse(refused.text).error).toContain('Search failed');
      expect(refused.text).not.toContain(wrong);
      const none = await search({ query: 'no key' }, null);
      expect(none.error).toMatchObject({ code: 'SEARCH_NOT_CONFIGURED', retryable: false });
    });
  });
});
