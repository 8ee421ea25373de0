import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP reverse proxy on loopback that sends each request to the next backend in turn, as a
 * Kubernetes Service without session affinity does: no stickiness, so a session's requests land
 * on every replica. A backend that refuses the connection (killed) is skipped for that request.
 * Bodies and SSE responses are streamed through unbuffered. Counts the requests each backend took,
 * and notes which backend took each (its HTTP method and JSON-RPC method, if any).
 */
export class RoundRobinProxy {
  readonly hits: number[];
  readonly taken: Array<{ backend: number; method: string; rpc?: string }> = [];
  private next = 0;
  private server?: Server;

  constructor(private readonly backends: number[]) {
    this.hits = backends.map(() => 0);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.forward(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const first = this.next++;
    for (let attempt = 0; attempt < this.backends.length; attempt++) {
      const i = (first + attempt) % this.backends.length;
      const ok = await new Promise<boolean>((resolve) => {
        const up = request(
          { host: '127.0.0.1', port: this.backends[i], method: req.method, path: req.url, headers: req.headers },
          (upRes) => {
            this.hits[i]! += 1;
            this.taken.push({ backend: i, method: req.method ?? '', ...rpcMethod(body) });
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            upRes.pipe(res);
            res.once('close', () => upRes.destroy());
            // A backend that dies mid-response breaks the client's connection too, as a load balancer does.
            upRes.once('close', () => {
              if (!upRes.complete) res.destroy();
            });
            resolve(true);
          },
        );
        up.once('error', (e: NodeJS.ErrnoException) => {
          if (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') return resolve(false);
          if (!res.headersSent) res.writeHead(502).end();
          resolve(true);
        });
        up.end(body);
      });
      if (ok) return;
    }
    res.writeHead(502).end();
  }
}

function rpcMethod(body: Buffer): { rpc?: string } {
  try {
    const m = (JSON.parse(body.toString('utf8')) as { method?: unknown }).method;
    return typeof m === 'string' ? { rpc: m } : {};
  } catch {
    return {};
  }
}
