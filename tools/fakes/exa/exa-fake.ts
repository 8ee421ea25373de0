/**
 * A local stand-in for Exa's REST API, speaking the shapes the official SDK (exa-js 2.x, unmodified)
 * sends and reads (exa-js dist/index.mjs, `Exa.request`, `search`, `getContents`):
 *
 * - `POST /search`: JSON body `{query, numResults?, type?, category?, includeDomains?, excludeDomains?,
 *   startPublishedDate?, endPublishedDate?, userLocation?, contents?: {text?, highlights?, summary?}}`,
 *   header `x-api-key`; answers `{requestId, resolvedSearchType, results: [{id, url, title,
 *   publishedDate, author, text?, highlights?, highlightScores?, summary?}]}`.
 * - `POST /contents`: `{urls: [...], text?: true|{...}, ...}`; answers `{requestId, results, statuses}`:
 *   pages the test registered come back as results, any other URL as an error status (as Exa does
 *   for a page it cannot crawl).
 * - Errors as Exa answers them: the status and `{requestId, error, tag}`; the SDK turns them into
 *   an ExaError with the status.
 *
 * Canned results are made from the request (title and URL name the query and the index; a domain of
 * includeDomains when given), so a test can tell what reached Exa. Every request is recorded.
 * Latency and faults (401, 429, 500, a malformed JSON body) can be injected.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ExaFault = 'unauthorized' | 'rate_limited' | 'server_error' | 'malformed_json';

export interface ExaFakeOptions {
  port?: number;
  host?: string;
  /** Keys the fake accepts (any other answers 401); default: any non-empty key. */
  apiKeys?: string[];
  latencyMs?: number;
}

export interface RecordedExaRequest {
  method: string;
  path: string;
  apiKey: string | undefined;
  userAgent: string | undefined;
  body: Record<string, unknown>;
}

export interface ExaPage {
  title?: string;
  author?: string;
  publishedDate?: string;
  text: string;
}

export interface ExaFake {
  /** The base URL to give the SDK (EXA_BASE_URL). */
  url: string;
  requests: RecordedExaRequest[];
  /** Pages /contents answers, by URL. */
  pages: Map<string, ExaPage>;
  /** Every request answers this fault until cleared (undefined). */
  fault: ExaFault | undefined;
  latencyMs: number;
  close(): Promise<void>;
}

const FAULTS: Record<Exclude<ExaFault, 'malformed_json'>, [number, string, string]> = {
  unauthorized: [401, 'Invalid API key', 'INVALID_API_KEY'],
  rate_limited: [429, 'You have exceeded your rate limit', 'RATE_LIMIT_EXCEEDED'],
  server_error: [500, 'Internal server error', 'INTERNAL_ERROR'],
};

export async function startExaFake(opts: ExaFakeOptions = {}): Promise<ExaFake> {
  const fake: ExaFake = {
    url: '',
    requests: [],
    pages: new Map(),
    fault: undefined,
    latencyMs: opts.latencyMs ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    handle(fake, opts, req, res).catch((e: Error) =>
      send(res, 500, { requestId: randomUUID(), error: `fake: ${e.message}` }),
    );
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve()),
  );
  const addr = server.address() as AddressInfo;
  fake.url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  return fake;
}

async function handle(fake: ExaFake, opts: ExaFakeOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readBody(req);
  const path = (req.url ?? '/').split('?')[0]!;
  let body: Record<string, unknown> = {};
  try {
    body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
  } catch {
    return send(res, 400, { requestId: randomUUID(), error: 'Request body is not JSON', tag: 'INVALID_REQUEST_BODY' });
  }
  const apiKey = header(req, 'x-api-key');
  fake.requests.push({ method: req.method ?? '', path, apiKey, userAgent: header(req, 'user-agent'), body });
  if (fake.latencyMs > 0) await new Promise((r) => setTimeout(r, fake.latencyMs));
  if (!apiKey || (opts.apiKeys && !opts.apiKeys.includes(apiKey)))
    return send(res, 401, { requestId: randomUUID(), error: 'Invalid API key', tag: 'INVALID_API_KEY' });
  if (fake.fault === 'malformed_json') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"requestId": "x", "results": [');
    return;
  }
  if (fake.fault) {
    const [status, error, tag] = FAULTS[fake.fault];
    return send(res, status, { requestId: randomUUID(), error, tag });
  }
  if (req.method !== 'POST') return send(res, 405, { requestId: randomUUID(), error: 'Method not allowed' });
  if (path === '/search') return send(res, 200, search(body));
  if (path === '/contents') return send(res, 200, contents(fake, body));
  return send(res, 404, { requestId: randomUUID(), error: `No route ${path}`, tag: 'NOT_FOUND' });
}

function search(body: Record<string, unknown>): unknown {
  const query = String(body.query ?? '');
  if (!query) return { requestId: randomUUID(), results: [] };
  const n = Math.min(Math.max(Number(body.numResults ?? 10) || 10, 1), 100);
  const contents = (body.contents ?? {}) as {
    text?: unknown;
    highlights?: { highlightsPerUrl?: number };
    summary?: unknown;
  };
  const domain = (body.includeDomains as string[] | undefined)?.[0] ?? 'example.com';
  const slug =
    query
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'q';
  const results = Array.from({ length: n }, (_, i) => {
    const r: Record<string, unknown> = {
      id: `https://${domain}/${slug}/${i + 1}`,
      url: `https://${domain}/${slug}/${i + 1}`,
      title: `Result ${i + 1} for ${query}`,
      publishedDate: `2026-01-${String((i % 28) + 1).padStart(2, '0')}T00:00:00.000Z`,
      author: i % 2 === 0 ? `Author ${i + 1}` : null,
      score: 1 - i / 1000,
    };
    if (contents.text) r.text = `Full text of result ${i + 1} about ${query}.`;
    if (contents.highlights) {
      const per = contents.highlights.highlightsPerUrl ?? 1;
      r.highlights = Array.from({ length: per }, (_, h) => `Highlight ${h + 1} of result ${i + 1} about ${query}.`);
      r.highlightScores = Array.from({ length: per }, () => 0.5);
    }
    if (contents.summary) r.summary = `Summary of result ${i + 1} for ${query}.`;
    return r;
  });
  return { requestId: randomUUID(), resolvedSearchType: 'neural', results, costDollars: { total: 0.005 } };
}

function contents(fake: ExaFake, body: Record<string, unknown>): unknown {
  const urls = Array.isArray(body.urls) ? (body.urls as string[]) : [];
  const results: unknown[] = [];
  const statuses: unknown[] = [];
  for (const url of urls) {
    const page = fake.pages.get(url);
    if (!page) {
      statuses.push({ id: url, status: 'error', error: { tag: 'CRAWL_NOT_FOUND', httpStatusCode: 404 } });
      continue;
    }
    results.push({
      id: url,
      url,
      title: page.title ?? null,
      publishedDate: page.publishedDate ?? null,
      author: page.author ?? null,
      text: page.text,
    });
    statuses.push({ id: url, status: 'success' });
  }
  return { requestId: randomUUID(), results, statuses };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
