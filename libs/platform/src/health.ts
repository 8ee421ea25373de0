import { createServer, type Server } from 'node:http';

export type ReadinessCheck = () => Promise<void>;

/** Readiness checks registered by app modules (DB reachable, ...). NATS is always checked. */
export class HealthRegistry {
  private readonly checks = new Map<string, ReadinessCheck>();
  draining = false;
  /** Prometheus text exposition served on /metrics, when an app registers one. */
  metrics?: () => string;
  /** Metrics every app serves (e.g. events dropped before any handler), after the app's own. */
  readonly common: (() => string)[] = [];

  add(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  async evaluate(): Promise<{ ok: boolean; checks: Record<string, string> }> {
    const out: Record<string, string> = {};
    let ok = !this.draining;
    if (this.draining) out.shutdown = 'draining';
    for (const [name, check] of this.checks) {
      try {
        await Promise.race([
          check(),
          new Promise((_, rej) => setTimeout(() => rej(new Error('timed out')), 2000).unref()),
        ]);
        out[name] = 'ok';
      } catch (e) {
        ok = false;
        out[name] = (e as Error).message.slice(0, 200);
      }
    }
    return { ok, checks: out };
  }
}

/** /healthz (the process serves), /readyz (its dependencies answer and it is not draining) and /metrics when registered. */
export function startHealthServer(registry: HealthRegistry, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.url === '/healthz') return reply(200, { status: 'ok' });
    if (req.url === '/metrics' && (registry.metrics || registry.common.length)) {
      const text = [registry.metrics?.() ?? '', ...registry.common.map((m) => m())]
        .filter(Boolean)
        .map((t) => (t.endsWith('\n') ? t : `${t}\n`));
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text.join(''));
      return;
    }
    if (req.url === '/readyz') {
      registry.evaluate().then(
        (r) => reply(r.ok ? 200 : 503, { status: r.ok ? 'ready' : 'not ready', checks: r.checks }),
        () => reply(503, { status: 'not ready' }),
      );
      return;
    }
    reply(404, { error: 'not found' });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
