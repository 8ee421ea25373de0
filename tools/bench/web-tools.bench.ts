/**
 * `npm run bench:web`: the web built-ins through web-tools' internal subjects, as the executor
 * calls them (sealed as the executor), each beside baselines of the same run:
 *
 * - fetch_webpage of a ~200 KB article page from a local HTTP server (pinned fetch + Readability
 *   extraction + markdown), beside a bare HTTP GET of the same page from this process and the
 *   extraction + markdown alone, in-process.
 * - web_search against the Exa fake with 0 ms latency (Toolplane's overhead), beside the same
 *   search through exa-js from this process.
 *
 * BENCH_N (default 200) calls per case after a warm-up, interleaved. Starts its own stack
 * (credentials + web-tools, fresh database and subject prefix) on the local NATS and Postgres.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Exa } from 'exa-js';
import { WebFetchWebpage, WebSearch } from '@toolplane/contracts';
import { htmlToReadable, renderPage } from '../../apps/web-tools/src/web/readable';
import { toExaOptions } from '../../apps/web-tools/src/web/web-search';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';
import { startExaFake } from '../fakes/exa/exa-fake';
import { HEADER, measureInterleaved, row } from './stats';

const N = Number(process.env.BENCH_N ?? 200);
const KEY = 'exa-bench-key';

/** A news-like page of about `bytes`: navigation, an article of paragraphs with links and emphasis, a footer. */
function articlePage(bytes: number): string {
  const para = (i: number) =>
    `<p>Paragraph ${i}. The <strong>red fox</strong> (<em>Vulpes vulpes</em>) is the largest of the true foxes; see <a href="https://example.org/fox/${i}">source ${i}</a> for the field notes collected this season.</p>\n`;
  const parts = [
    '<!doctype html><html><head><meta charset="utf-8"><title>Foxes in town | Field notes</title>',
    '<meta name="author" content="Vera Fox"><meta property="article:published_time" content="2026-03-04T05:06:07Z"></head><body>',
    `<nav>${Array.from({ length: 40 }, (_, i) => `<a href="/s/${i}">Section ${i}</a>`).join(' ')}</nav><article><h1>Foxes in town</h1>`,
  ];
  let size = parts.join('').length;
  for (let i = 0; size < bytes - 200; i++) {
    const p = i % 12 === 11 ? `<h2>Part ${i}</h2>\n<ul><li>one</li><li>two</li></ul>\n` : para(i);
    parts.push(p);
    size += p.length;
  }
  parts.push('</article><footer>Copyright, cookies, newsletter</footer></body></html>');
  return parts.join('');
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  const page = articlePage(200 * 1024);
  const site = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page),
  );
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/article`;
  const exa = await startExaFake({ apiKeys: [KEY], latencyMs: 0 });
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['credentials', 'web-tools'],
    env: { LOG_LEVEL: 'warn' },
    appEnv: {
      'web-tools': { TOOLPLANE_PROFILE: 'production', WEB_FETCH_ALLOWED_HOSTS: '127.0.0.1/32', EXA_BASE_URL: exa.url },
    },
  });
  const client = await RawClient.connect(prefix);
  try {
    const call = (subject: string, body: Record<string, unknown>) => async () => {
      const r = await client.req(subject, { org_id: 'bench', ...body }, { timeoutMs: 60_000 });
      if (r.error || typeof r.text !== 'string' || r.text.includes('"error"'))
        throw new Error(JSON.stringify(r).slice(0, 500));
    };
    const sdk = new Exa(KEY, exa.url);
    const args = { query: 'red foxes in towns', num_results: 10 };
    const cases = [
      { label: 'fetch_webpage 200 KB article (web-tools)', fn: call(WebFetchWebpage.subject, { url }) },
      { label: '  baseline: bare HTTP GET of the page', fn: async () => void (await (await fetch(url)).text()) },
      {
        label: '  baseline: extraction + markdown only',
        fn: async () => void renderPage(htmlToReadable(page, url), url),
      },
      { label: 'web_search, Exa fake at 0 ms (web-tools)', fn: call(WebSearch.subject, { args, exa_api_key: KEY }) },
      {
        label: '  baseline: exa-js search from here',
        fn: async () => void (await sdk.search(args.query, toExaOptions(args) as never)),
      },
    ];
    // Interleaved, so drift on a noisy box hits every case alike.
    const stats = await measureInterleaved(cases, N);
    process.stdout.write(
      `\nToolplane web built-ins benchmark (${new Date().toISOString()}, ${N} sequential calls per case, page ${(page.length / 1024).toFixed(0)} KB)\n${HEADER}\n`,
    );
    for (const x of stats) process.stdout.write(`${row(x.label, x.s)}\n`);
    const [f, , , s, sb] = stats.map((x) => x.s);
    process.stdout.write(
      `\nfetch_webpage p50 ${f!.p50.toFixed(2)} ms; web_search p50 ${s!.p50.toFixed(2)} ms vs exa-js from here ${sb!.p50.toFixed(2)} ms: Toolplane overhead ${(s!.p50 - sb!.p50).toFixed(2)} ms\n`,
    );
  } finally {
    await client.close();
    await stack.stop();
    await deleteStreams(prefix);
    await dropDatabase(db);
    await exa.close();
    site.closeAllConnections();
    site.close();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
