import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { APP_CONFIG, PinnedHttp, UrlGuard } from '@toolplane/platform';
import type { WebToolsConfig } from '../web-tools.config';
import { ExaClient } from './exa.client';
import { pdfText } from './pdf-text';
import { htmlToReadable, renderPage } from './readable';

/** The content types fetch_webpage reads, by how it reads them. */
const READERS: Record<string, 'html' | 'text' | 'pdf'> = {
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/plain': 'text',
  'application/json': 'text',
  'application/xml': 'text',
  'text/xml': 'text',
  'application/pdf': 'pdf',
};
const SUPPORTED_CONTENT_TYPES = Object.keys(READERS);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** How long a host's vetted addresses are reused before it is resolved (and vetted) again. */
const PIN_TTL_MS = 30_000;

/**
 * fetch_webpage: only http(s); every hop (redirects included) vetted by the one SSRF policy and
 * connected only to the vetted addresses (PinnedHttp); the whole fetch bounded in time; the body
 * read up to the size cap and no further; HTML made readable markdown. With an Exa key, Exa's
 * contents first, as the reference does, and a direct fetch when Exa fails or has nothing.
 */
@Injectable()
export class FetchWebpageService implements OnModuleDestroy {
  private readonly log = new Logger(FetchWebpageService.name);
  private readonly http: PinnedHttp;

  constructor(
    @Inject(APP_CONFIG) private readonly config: WebToolsConfig,
    private readonly exa: ExaClient,
  ) {
    const guard = new UrlGuard({
      profile: config.TOOLPLANE_PROFILE,
      allowed: config.WEB_FETCH_ALLOWED_HOSTS,
      allowlistSetting: 'WEB_FETCH_ALLOWED_HOSTS',
    });
    this.http = new PinnedHttp(guard, {
      ttlMs: PIN_TTL_MS,
      connectTimeoutMs: Math.min(10_000, config.WEB_FETCH_TIMEOUT_MS),
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.http.close();
  }

  async fetch(rawUrl: string, exaApiKey?: string): Promise<string> {
    const url = httpUrl(rawUrl);
    const key = this.exa.keyFor(exaApiKey);
    if (key) {
      const viaExa = await this.viaExa(key, url.href);
      if (viaExa !== undefined) return viaExa;
    }
    return this.direct(url);
  }

  /** Exa's contents of the page as the reference answers them; undefined (fall back) when Exa fails or has nothing. */
  private async viaExa(key: string, url: string): Promise<string | undefined> {
    try {
      const [r] = await this.exa.contents(key, url, this.config.WEB_FETCH_TIMEOUT_MS);
      if (!r?.text) return undefined;
      return JSON.stringify(
        { title: r.title ?? null, published_date: r.publishedDate ?? null, author: r.author ?? null, text: r.text },
        null,
        2,
      );
    } catch (e) {
      this.log.log(`Exa contents failed, fetching directly: ${(e as Error).message}`);
      return undefined;
    }
  }

  private async direct(start: URL): Promise<string> {
    const timeoutMs = this.config.WEB_FETCH_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    let url = start;
    try {
      for (let hop = 0; ; hop++) {
        const res = await this.http.fetch(url, {
          redirect: 'manual',
          signal,
          headers: {
            accept: 'text/html, text/plain, application/json, application/xml;q=0.9, */*;q=0.1',
            'user-agent': 'toolplane-web-tools/1',
          },
        });
        const location = res.headers.get('location');
        if (REDIRECTS.has(res.status) && location) {
          await res.body?.cancel().catch(() => undefined);
          if (hop >= this.config.WEB_FETCH_MAX_REDIRECTS)
            throw new ToolplaneError(
              ErrorCode.FETCH_FAILED,
              `Too many redirects (more than ${this.config.WEB_FETCH_MAX_REDIRECTS})`,
              { url: start.href },
              false,
            );
          // The next hop is vetted like the first (scheme here, addresses by PinnedHttp before any socket).
          url = httpUrl(new URL(location, url).href);
          continue;
        }
        return await this.read(res, url, signal);
      }
    } catch (e) {
      if (e instanceof ToolplaneError) throw e;
      if (signal.aborted)
        throw new ToolplaneError(
          ErrorCode.FETCH_TIMEOUT,
          `The page did not load within ${timeoutMs} ms`,
          { timeout_ms: timeoutMs },
          { cause: e },
        );
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new ToolplaneError(
        ErrorCode.FETCH_FAILED,
        `Could not fetch ${url.origin}: ${cause?.code ?? cause?.message ?? (e as Error).message}`,
        { url: url.origin },
        { cause: e },
      );
    }
  }

  private async read(res: Response, url: URL, signal: AbortSignal): Promise<string> {
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel().catch(() => undefined);
      throw new ToolplaneError(
        ErrorCode.FETCH_FAILED,
        `${url.origin} answered HTTP ${res.status}`,
        { status: res.status, url: url.origin },
        res.status >= 500 || res.status === 429,
      );
    }
    const header = res.headers.get('content-type') ?? '';
    const type = header.split(';')[0]!.trim().toLowerCase();
    const reader = READERS[type];
    if (!reader) {
      await res.body?.cancel().catch(() => undefined);
      throw new ToolplaneError(
        ErrorCode.CONTENT_TYPE_UNSUPPORTED,
        `Cannot read ${url.origin}${url.pathname}: content type ${type || '(none)'} is not read`,
        { content_type: type || null, supported: SUPPORTED_CONTENT_TYPES },
      );
    }
    const body = await this.capped(res, signal);
    if (reader === 'pdf') {
      const pdf = await pdfText(body, this.config.WEB_FETCH_TIMEOUT_MS);
      return cut(renderPage({ ...pdf, markdown: pdf.text.trim() }, url.href), this.config.WEB_REPLY_MAX_BYTES);
    }
    const text = new TextDecoder(charsetOf(header), { fatal: false }).decode(body);
    const out = reader === 'html' ? renderPage(htmlToReadable(text, url.href), url.href) : text;
    return cut(out, this.config.WEB_REPLY_MAX_BYTES);
  }

  /** The body, read up to the cap: one byte more and the stream is cancelled (the rest is never read). */
  private async capped(res: Response, signal: AbortSignal): Promise<Uint8Array> {
    const max = this.config.WEB_FETCH_MAX_BYTES;
    const tooLarge = () =>
      new ToolplaneError(ErrorCode.CONTENT_TOO_LARGE, `The page is larger than ${max} bytes`, { limit_bytes: max });
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > max) {
      await res.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    if (!res.body) return new Uint8Array();
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body.getReader();
    for (;;) {
      if (signal.aborted) {
        await reader.cancel().catch(() => undefined);
        throw new ToolplaneError(
          ErrorCode.FETCH_TIMEOUT,
          `The page did not load within ${this.config.WEB_FETCH_TIMEOUT_MS} ms`,
          { timeout_ms: this.config.WEB_FETCH_TIMEOUT_MS },
        );
      }
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks);
  }
}

/** The URL if its scheme is http or https; URL_SCHEME_UNSUPPORTED naming the scheme otherwise. */
export function httpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ToolplaneError(
      ErrorCode.INVALID_ARGUMENTS,
      'Invalid URL: fetch_webpage takes an absolute http:// or https:// URL',
      { url: raw.slice(0, 200) },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    const scheme = url.protocol.replace(/:$/, '');
    throw new ToolplaneError(
      ErrorCode.URL_SCHEME_UNSUPPORTED,
      `Unsupported URL scheme: ${scheme} (only http and https)`,
      { scheme },
    );
  }
  return url;
}

function charsetOf(contentType: string): string {
  const m = /charset="?([A-Za-z0-9_.:-]+)"?/i.exec(contentType);
  try {
    return m ? new TextDecoder(m[1]!).encoding : 'utf-8';
  } catch {
    return 'utf-8';
  }
}

/** Text cut to `maxBytes` of UTF-8 (on a character boundary), saying so. */
export function cut(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = `\n\n[cut at ${maxBytes} bytes]`;
  let s = Buffer.from(text)
    .subarray(0, maxBytes - Buffer.byteLength(note))
    .toString('utf8');
  if (s.endsWith('\uFFFD')) s = s.slice(0, -1);
  return s + note;
}
