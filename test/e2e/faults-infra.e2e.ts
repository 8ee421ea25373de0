/**
 * Fault suite, infrastructure (issue 19): NATS and Postgres restarted under steady traffic. Both
 * run privately for this file (test/support/private-services.ts: the machine's shared ones serve
 * every other test file and are never restarted). Traffic is tool upserts through the public API:
 * each committed tool must have exactly one tool.created event (the outbox), each failed request
 * a typed error, and the services must live through it (same processes).
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { testPrefix, uniqueOrg } from '../support/context';
import { eventually } from '../support/executions';
import { eventsOn, perScenario, repeatScenario, sawOf, tally } from '../support/faults';
import { RawClient } from '../support/nats-client';
import {
  startPrivateNats,
  startPrivatePostgres,
  type PrivateNats,
  type PrivatePostgres,
} from '../support/private-services';
import { startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

/** Client-side errors a request may end with while NATS is away (all typed by the NATS client). */
const CLIENT_ERRORS = new Set([
  'client TimeoutError',
  'client RequestError',
  'client NoRespondersError',
  'client ConnectionError',
  'client ClosedConnectionError',
]);
/** Error replies a request may get while Postgres is away: typed, retryable. */
const RETRYABLE_REPLIES = /^error (SERVICE_UNAVAILABLE|REQUEST_TIMEOUT) retryable=true$/;

describe('faults: NATS and Postgres restarted under traffic', () => {
  const prefix = `${testPrefix()}fi`;
  let pg: PrivatePostgres;
  let nats: PrivateNats;
  let stack: Stack;
  let client: RawClient;

  const db = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
    const c = new Client({ connectionString: pg.url, connectionTimeoutMillis: 3000 });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => undefined);
    }
  };
  const pids = () =>
    [...stack.apps.values()].map((a) => `${a.name}:${a.proc.pid}:${a.proc.exitCode ?? a.proc.signalCode ?? 'alive'}`);
  const ready = async (app: string) => {
    try {
      return (await fetch(`http://127.0.0.1:${stack.apps.get(app as never)!.healthPort}/readyz`)).status === 200;
    } catch {
      return false;
    }
  };

  /**
   * Upserts tools one after another until `stop()`; each outcome kept (reply code or client error).
   * Returns the outcomes and, for the successes, the tool ids.
   */
  const traffic = (org: string, timeoutMs: number) => {
    const outcomes: Array<{ saw: string; at: number; id?: string }> = [];
    let stopped = false;
    const done = (async () => {
      for (let i = 0; !stopped; i++) {
        const r = await client
          .req(
            'toolplane.v1.tools.upsert',
            { org_id: org, tool: { source_code: pythonTool(`t_${i}_${randomUUID().slice(0, 6)}`, 'return 1') } },
            { timeoutMs },
          )
          .catch((e: Error) => e);
        outcomes.push({ saw: sawOf(r), at: Date.now(), id: (r as { tool?: { id: string } }).tool?.id });
        if (process.env.FAULT_DEBUG) process.stderr.write(`[faults] ${org} #${i}: ${sawOf(r)}\n`);
        // Gentle while it fails (an error reply can come back at once).
        if (r instanceof Error || (r as { error?: unknown }).error) await new Promise((res) => setTimeout(res, 50));
      }
    })();
    return {
      outcomes,
      okCount: () => outcomes.filter((o) => o.saw === 'ok').length,
      stop: async () => {
        stopped = true;
        await done;
      },
    };
  };

  /** What is stored for the org: tools, their created events (after the outbox drained), left in the outbox. */
  const storedFor = async (org: string) => {
    await eventually(
      () =>
        db(
          async (c) =>
            (await c.query('SELECT count(*)::int AS n FROM registry.event_outbox WHERE org_id = $1', [org])).rows[0].n,
        ),
      (n) => n === 0,
      60_000,
      200,
    );
    const rows: Array<{ id: string; name: string }> = await db(
      async (c) =>
        (await c.query(`SELECT id, name FROM registry.tools WHERE org_id = $1 AND name LIKE 't\\_%'`, [org])).rows,
    );
    const ids = rows.map((r) => r.id);
    if (process.env.FAULT_DEBUG)
      process.stderr.write(`[faults] ${org}: ${JSON.stringify(rows.map((r) => r.name).sort())}\n`);
    // The traffic's tools (named t_…); the org's built-ins are not this test's.
    const events = (await eventsOn(client.nc, prefix, 'tool.created'))
      .filter((e) => e.org_id === org && /^t_/.test(e.tool_name))
      .map((e) => e.tool_id as string);
    return { ids, events };
  };
  const expectExactlyOnce = ({ ids, events }: { ids: string[]; events: string[] }, oks: string[]) => {
    expect([...events].sort()).toEqual([...ids].sort());
    expect(new Set(events).size).toBe(events.length);
    for (const id of oks) expect(ids).toContain(id);
  };

  beforeAll(async () => {
    [pg, nats] = await Promise.all([startPrivatePostgres(), startPrivateNats()]);
    stack = await startStack({
      prefix,
      databaseUrl: pg.url,
      apps: ['schema', 'registry', 'credentials'],
      env: { LOG_LEVEL: 'warn', NATS_URL: nats.url },
      readyTimeoutMs: 120_000,
      appEnv: { registry: { REGISTRY_OUTBOX_RELAY_MS: '200', REGISTRY_OUTBOX_RELAY_AFTER_MS: '500' } },
    });
    client = await RawClient.connect(prefix, {
      nats: { servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 },
    });
  }, 240_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stack?.stop();
    await nats?.destroy();
    pg?.destroy();
  }, 120_000);

  it(
    'NATS restarted (JetStream kept) during traffic: services reconnect without restart, failures typed, no event lost',
    async () => {
      await repeatScenario('NATS restart during upsert traffic', async () => {
        const org = uniqueOrg('nats');
        await client.tokenFor(org);
        const before = pids();
        const t = traffic(org, 3000);
        await eventually(
          async () => t.okCount(),
          (n) => n >= 5,
          60_000,
        );
        await nats.stop();
        await new Promise((res) => setTimeout(res, 1000));
        await nats.start();
        const restartedAt = Date.now();
        await eventually(
          async () => t.outcomes.filter((o) => o.saw === 'ok' && o.at > restartedAt).length,
          (n) => n >= 5,
          60_000,
          100,
        );
        await t.stop();
        expect(pids()).toEqual(before);
        const failures = t.outcomes.filter((o) => o.saw !== 'ok').map((o) => o.saw);
        for (const f of failures) expect([f, CLIENT_ERRORS.has(f) || RETRYABLE_REPLIES.test(f)]).toEqual([f, true]);
        const stored = await storedFor(org);
        expectExactlyOnce(
          stored,
          t.outcomes.flatMap((o) => (o.id ? [o.id] : [])),
        );
        return {
          saw: `${t.okCount()} ok; failed: ${tally(failures)}`,
          stored: `${stored.ids.length} tools, ${stored.events.length} tool.created events (each once); same service pids`,
        };
      });
    },
    perScenario(240_000),
  );

  it(
    'Postgres restarted during traffic: readiness false then true, failures typed (no hang, no crash), no half-written rows',
    async () => {
      await repeatScenario('Postgres restart during upsert traffic', async () => {
        const org = uniqueOrg('pg');
        await client.tokenFor(org);
        const before = pids();
        const t = traffic(org, 15_000);
        await eventually(
          async () => t.okCount(),
          (n) => n >= 5,
          60_000,
        );
        pg.stop('immediate');
        const downAt = Date.now();
        await eventually(
          () => ready('registry'),
          (ok) => !ok,
          30_000,
          100,
        );
        // Requests while it is down get an answer (no hang): wait for a few.
        await eventually(
          async () => t.outcomes.filter((o) => o.at > downAt + 500).length,
          (n) => n >= 3,
          60_000,
          100,
        );
        pg.start();
        await eventually(
          () => ready('registry'),
          (ok) => ok,
          60_000,
          100,
        );
        const upAt = Date.now();
        await eventually(
          async () => t.outcomes.filter((o) => o.saw === 'ok' && o.at > upAt).length,
          (n) => n >= 3,
          60_000,
          100,
        );
        await t.stop();
        expect(pids()).toEqual(before);
        const during = t.outcomes.filter((o) => o.saw !== 'ok').map((o) => o.saw);
        expect(during.length).toBeGreaterThan(0);
        for (const f of during) expect([f, RETRYABLE_REPLIES.test(f)]).toEqual([f, true]);
        const stored = await storedFor(org);
        expectExactlyOnce(
          stored,
          t.outcomes.flatMap((o) => (o.id ? [o.id] : [])),
        );
        return {
          saw: `readyz 503 then 200; ${t.okCount()} ok; while down: ${tally(during)}`,
          stored: `${stored.ids.length} tools, ${stored.events.length} tool.created events (each once), outbox empty; same service pids`,
        };
      });
    },
    perScenario(240_000),
  );
});
