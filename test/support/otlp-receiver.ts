import { createServer, type Server } from 'node:http';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

/** A minimal OTLP/HTTP JSON trace receiver (POST /v1/traces), so tests read what apps export. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces') this.ingest(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server!.address() as { port: number }).port;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
  }

  /** Polls until `pred` holds for the spans of `traceId` (spans arrive in batches). */
  async waitFor(
    traceId: string,
    pred: (spans: ReceivedSpan[]) => boolean,
    timeoutMs = 10_000,
  ): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = this.spans.filter((s) => s.traceId === traceId);
      if (pred(spans)) return spans;
      if (Date.now() > deadline) return spans;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private ingest(body: string): void {
    const doc = JSON.parse(body) as { resourceSpans?: any[] };
    for (const rs of doc.resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '?';
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          const attributes = attrs(s.attributes);
          const events = (s.events ?? []).map((e: any) => ({
            name: e.name as string,
            attributes: attrs(e.attributes),
          }));
          this.spans.push({
            service,
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId ?? ''),
            name: s.name,
            kind: s.kind,
            attributes,
            events,
          });
        }
      }
    }
  }
}

function attrs(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = Object.values(a.value ?? {})[0];
  return out;
}

function hex(id: string): string {
  if (!id || /^[0-9a-f]+$/.test(id)) return id ?? '';
  return Buffer.from(id, 'base64').toString('hex');
}
