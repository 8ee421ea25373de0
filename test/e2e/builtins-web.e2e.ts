/**
 * fetch_webpage and web_search through the public API: the executor hands each call to web-tools
 * (sealed), with the agent's EXA_API_KEY when it has one, and turns web-tools' typed errors into
 * the tool's error result. (web-tools itself is tested in depth in web-tools.e2e.ts.)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startExaFake, type ExaFake } from '../../tools/fakes/exa/exa-fake';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';

describe('built-ins fetch_webpage and web_search (dispatch)', () => {
  const prefix = `${testPrefix()}.bweb`;
  const org = uniqueOrg('bweb');
  const EXA_KEY = `exa-agent-${Math.random().toString(36).slice(2, 14)}`;
  let stack: Stack;
  let client: RawClient;
  let exa: ExaFake;
  let site: Server;
  let base: string;
  const ok = (r: any) => {
    if (r?.error && !r.status) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const call = (subject: string, body: Record<string, unknown>) =>
    client.req(`toolplane.v1.${subject}`, { org_id: org, ...body }, { timeoutMs: 60_000 });

  beforeAll(async () => {
    exa = await startExaFake();
    site = createServer((req, res) => {
      if (req.url === '/article') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<!doctype html><html><head><title>Otters</title></head><body><article><h1>Otters at play</h1>${'<p>Sea otters hold hands while they sleep so they do not drift apart in the current.</p>'.repeat(8)}</article></body></html>`,
        );
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'executor', 'web-tools'],
      appEnv: { 'web-tools': { EXA_BASE_URL: exa.url, WEB_FETCH_ALLOWED_HOSTS: '127.0.0.1' } },
      readyTimeoutMs: 90_000,
    });
    client = await RawClient.connect(prefix);
    ok(await call('secrets.set', { scope: 'agent', agent_id: 'researcher', key: 'EXA_API_KEY', value: EXA_KEY }));
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await exa?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
  });

  it('fetch_webpage: the page as markdown from web-tools; a refused scheme is the tool error result with its code', async () => {
    const r = ok(await call('tools.execute', { tool_name: 'fetch_webpage', args: { url: `${base}/article` } }));
    expect(r).toMatchObject({ status: 'success', provider: 'web-tools' });
    expect(r.func_return).toEqual(expect.stringContaining('Sea otters hold hands'));

    const file = await call('tools.execute', { tool_name: 'fetch_webpage', args: { url: 'file:///etc/passwd' } });
    expect(file).toMatchObject({ status: 'error', provider: 'web-tools', error: { code: 'URL_SCHEME_UNSUPPORTED' } });
    expect(JSON.stringify(file)).not.toContain('root:');
  });

  it("web_search: the agent's EXA_API_KEY goes to web-tools for the call, never back in the result", async () => {
    const query = `otters ${Math.random().toString(36).slice(2, 8)}`;
    const r = ok(
      await call('tools.execute', {
        tool_name: 'web_search',
        args: { query, num_results: 3, include_domains: ['example.com'] },
        agent_id: 'researcher',
      }),
    );
    expect(r).toMatchObject({ status: 'success', provider: 'web-tools' });
    expect(JSON.parse(r.func_return)).toMatchObject({ query, results: expect.any(Array) });
    const sent = exa.requests.filter((x) => x.path === '/search' && x.body.query === query);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ apiKey: EXA_KEY, body: { numResults: 3, includeDomains: ['example.com'] } });
    expect(JSON.stringify(r)).not.toContain(EXA_KEY);

    // No key for this call (no agent secret, none in web-tools' config): SEARCH_NOT_CONFIGURED, as the tool's error result.
    const none = await call('tools.execute', { tool_name: 'web_search', args: { query } });
    expect(none).toMatchObject({ status: 'error', provider: 'web-tools', error: { code: 'SEARCH_NOT_CONFIGURED' } });
  });

  it('runs both in one batch (parallel-safe), each with its own result', async () => {
    const r = ok(
      await call('tools.execute-batch', {
        agent_id: 'researcher',
        calls: [
          { call_id: 'page', tool_name: 'fetch_webpage', args: { url: `${base}/article` } },
          { call_id: 'search', tool_name: 'web_search', args: { query: 'otters in a batch' } },
          { call_id: 'gopher', tool_name: 'fetch_webpage', args: { url: 'gopher://127.0.0.1/' } },
        ],
      }),
    );
    const by = new Map(r.results.map((x: any) => [x.call_id, x]));
    expect(by.get('page')).toMatchObject({ status: 'success', func_return: expect.stringContaining('Otters') });
    expect(by.get('search')).toMatchObject({ status: 'success' });
    expect(by.get('gopher')).toMatchObject({ status: 'error', error: { code: 'URL_SCHEME_UNSUPPORTED' } });
  });
});
