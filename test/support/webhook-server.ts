import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface ReceivedHook {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The signature matched and the timestamp was inside the replay window. */
  verified: boolean;
}

/** What a route answers; `null` drops the connection without a reply. */
export type Route = (req: ReceivedHook, res: ServerResponse, hits: number) => void | null | Promise<void | null>;

/**
 * A real HTTP credentials webhook on 127.0.0.1 that verifies Toolplane's signature the way a
 * receiver should: HMAC-SHA256 over `${timestamp}.${body}`, timestamp within the replay window.
 */
export class WebhookServer {
  readonly received: ReceivedHook[] = [];
  private readonly routes = new Map<string, Route>();
  private readonly hits = new Map<string, number>();
  private server?: Server;
  port = 0;

  constructor(
    private readonly signingSecret: string,
    private readonly replayWindowS = 300,
    private readonly host = '127.0.0.1',
  ) {}

  route(path: string, handler: Route): string {
    this.routes.set(path, handler);
    return this.url(path);
  }

  url(path: string): string {
    return `http://${this.host}:${this.port}${path}`;
  }

  hitsOf(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const path = (req.url ?? '/').split('?')[0]!;
        const n = (this.hits.get(path) ?? 0) + 1;
        this.hits.set(path, n);
        const hook: ReceivedHook = { path, headers: req.headers, body: safeJson(raw), verified: this.verify(req, raw) };
        this.received.push(hook);
        const handler = this.routes.get(path);
        if (!handler) return void res.writeHead(404).end();
        if ((await handler(hook, res, n)) === null) req.socket.destroy();
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, this.host, () => r()));
    this.port = (this.server!.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private verify(req: IncomingMessage, raw: string): boolean {
    const ts = Number(req.headers['toolplane-timestamp']);
    const sig = String(req.headers['toolplane-signature'] ?? '');
    if (!Number.isFinite(ts) || Math.abs(Date.now() / 1000 - ts) > this.replayWindowS) return false;
    const want = Buffer.from(`v1=${createHmac('sha256', this.signingSecret).update(`${ts}.${raw}`).digest('hex')}`);
    return sig.length === want.length && timingSafeEqual(Buffer.from(sig), want);
  }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
