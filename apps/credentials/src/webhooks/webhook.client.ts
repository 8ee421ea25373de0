import { WEBHOOK_SIGNATURE_PREFIX, WebhookHeaders, WebhookReplyBody } from '@toolplane/contracts';
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { EgressRefused, type UrlGuard } from '@toolplane/platform';

export type WebhookFailureReason =
  | 'timeout'
  | 'connection'
  | 'refused_address'
  | 'redirect'
  | 'http_status'
  | 'too_large'
  | 'invalid_reply';

/** A failed webhook call. The message names what went wrong, never a header, body or value. */
export class WebhookFailure extends Error {
  constructor(
    readonly reason: WebhookFailureReason,
    message: string,
  ) {
    super(message);
  }
}

export interface WebhookCall {
  url: string;
  signingSecret: string;
  timeoutMs: number;
  body: Record<string, unknown>;
}

const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);
const MAX_REDIRECTS = 3;

/** `v1=` + hex HMAC-SHA256 of `${timestamp}.${body}`: what a receiver recomputes and compares. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `${WEBHOOK_SIGNATURE_PREFIX}${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * POSTs the signed request and returns the validated `env` of the reply. One deadline covers the
 * whole exchange; a connection error is retried once; 307/308 redirects are followed (re-checked
 * against the SSRF policy), other redirects fail; the reply is read up to `maxReplyBytes`.
 */
export class WebhookClient {
  constructor(
    private readonly guard: UrlGuard,
    private readonly maxReplyBytes: number,
  ) {}

  async fetchEnv(call: WebhookCall): Promise<Record<string, string>> {
    const signal = AbortSignal.timeout(call.timeoutMs);
    const body = JSON.stringify(call.body);
    const deliveryId = randomUUID();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.exchange(new URL(call.url), body, call, deliveryId, signal);
      } catch (e) {
        const failure = this.classify(e, call.timeoutMs, signal);
        if (failure.reason === 'connection' && attempt === 0 && !signal.aborted) continue;
        throw failure;
      }
    }
  }

  private async exchange(
    url: URL,
    body: string,
    call: WebhookCall,
    deliveryId: string,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    for (let hop = 0; ; hop++) {
      this.guard.parse(url);
      const timestamp = Math.floor(Date.now() / 1000);
      const res = await this.post(
        url,
        body,
        {
          'content-type': 'application/json',
          accept: 'application/json',
          'user-agent': 'toolplane-credentials/1',
          [WebhookHeaders.TIMESTAMP]: String(timestamp),
          [WebhookHeaders.SIGNATURE]: signWebhook(call.signingSecret, timestamp, body),
          [WebhookHeaders.DELIVERY_ID]: deliveryId,
        },
        signal,
      );
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume();
        const location = res.headers.location;
        if ((status !== 307 && status !== 308) || !location)
          throw new WebhookFailure('redirect', `the webhook answered a ${status} redirect (only 307/308 are followed)`);
        if (hop >= MAX_REDIRECTS) throw new WebhookFailure('redirect', `more than ${MAX_REDIRECTS} redirects`);
        url = new URL(location, url);
        continue;
      }
      if (status < 200 || status >= 300) {
        res.resume();
        throw new WebhookFailure('http_status', `the webhook answered HTTP ${status}`);
      }
      const text = await this.readLimited(res);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new WebhookFailure('invalid_reply', 'the webhook reply is not JSON');
      }
      const parsed = WebhookReplyBody.safeParse(json);
      if (!parsed.success) {
        const paths = parsed.error.issues.slice(0, 5).map((i) => i.path.map(String).join('.') || '(root)');
        throw new WebhookFailure(
          'invalid_reply',
          `the webhook reply is not {env: {NAME: "value"}} (at ${paths.join(', ')})`,
        );
      }
      return parsed.data.env;
    }
  }

  private post(url: URL, body: string, headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: this.guard.lookup,
        signal,
        agent: false,
      });
      req.once('response', resolve);
      req.once('error', reject);
      req.end(body);
    });
  }

  private readLimited(res: IncomingMessage): Promise<string> {
    const declared = Number(res.headers['content-length'] ?? 0);
    if (declared > this.maxReplyBytes) {
      res.destroy();
      return Promise.reject(
        new WebhookFailure('too_large', `the webhook reply is larger than ${this.maxReplyBytes} bytes`),
      );
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > this.maxReplyBytes) {
          res.destroy();
          reject(new WebhookFailure('too_large', `the webhook reply is larger than ${this.maxReplyBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.once('error', reject);
    });
  }

  private classify(e: unknown, timeoutMs: number, signal: AbortSignal): WebhookFailure {
    if (e instanceof WebhookFailure) return e;
    if (e instanceof EgressRefused)
      return new WebhookFailure('refused_address', `the webhook address was refused: ${e.message}`);
    if (signal.aborted) return new WebhookFailure('timeout', `the webhook did not answer within ${timeoutMs} ms`);
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (CONNECTION_ERRORS.has(code))
      return new WebhookFailure('connection', `could not connect to the webhook (${code})`);
    if (code === 'ENOTFOUND') return new WebhookFailure('connection', 'the webhook host does not resolve (ENOTFOUND)');
    return new WebhookFailure('connection', `the webhook request failed (${code || 'network error'})`);
  }
}
