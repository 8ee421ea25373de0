/**
 * The transactional outbox of libs/platform against real Postgres and JetStream: staged messages
 * exist exactly when their transaction committed, drain publishes them (in order, once per id),
 * and the relay publishes what a writer left behind.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { ToolCreated } from '@toolplane/contracts';
import { ensureEventsStream } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { testDatabaseUrl, testPrefix } from '../support/context';
import { serviceClient } from '../support/identity';
import { TransactionalOutbox, type PendingEvent } from '@toolplane/platform';

describe('TransactionalOutbox', () => {
  const schema = `outbox_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const prefix = testPrefix();
  let ds: DataSource;
  let svc: Awaited<ReturnType<typeof serviceClient>>;
  let sut: TransactionalOutbox;

  const event = (org: string, name: string): PendingEvent => {
    const eventId = randomUUID();
    const payload = {
      event_id: eventId,
      occurred_at: new Date().toISOString(),
      org_id: org,
      tool_id: `tool-${randomUUID()}`,
      tool_name: name,
      tool: {
        id: `tool-${randomUUID()}`,
        tool_type: 'custom',
        description: null,
        source_type: 'python',
        name,
        tags: [],
        source_code: 'def f(): ...',
        json_schema: null,
        args_json_schema: null,
        return_char_limit: 50000,
        pip_requirements: null,
        npm_requirements: null,
        default_requires_approval: null,
        enable_parallel_execution: null,
        created_by_id: null,
        last_updated_by_id: null,
        metadata_: null,
        project_id: null,
      },
    };
    return { descriptor: ToolCreated, eventId, orgId: org, payload };
  };
  const rows = async (org: string) =>
    (await ds.query(`SELECT event_id FROM ${schema}.event_outbox WHERE org_id = $1`, [org])) as unknown[];
  /** The tool names of the org's tool.created events in the stream, in order. */
  const published = async (org: string) => {
    const jsm = await jetstreamManager(svc.nc);
    const stream = `${prefix}_TOOLPLANE_EVENTS`;
    const out: string[] = [];
    for (let seq = 1; ; ) {
      const m = await jsm.streams
        .getMessage(stream, { seq, next_by_subj: `${prefix}.toolplane.v1.events.tool.created` } as unknown as {
          seq: number;
        })
        .catch(() => null);
      if (!m) return out;
      const p = m.json<{ org_id: string; tool_name: string }>();
      if (p.org_id === org) out.push(p.tool_name);
      seq = m.seq + 1;
    }
  };

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: testDatabaseUrl(), extra: { max: 4 } });
    await ds.initialize();
    await ds.query(`CREATE SCHEMA ${schema}`);
    await ds.query(`CREATE TABLE ${schema}.event_outbox (
      seq bigserial PRIMARY KEY, event_id uuid NOT NULL UNIQUE, org_id text NOT NULL, prefix text NOT NULL, subject text NOT NULL,
      payload jsonb NOT NULL, trace jsonb NOT NULL DEFAULT '{}'::jsonb, attempts integer NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now())`);
    svc = await serviceClient('registry', prefix);
    await ensureEventsStream(svc.nc, prefix);
    sut = new TransactionalOutbox(ds, svc.messaging, {
      table: `${schema}.event_outbox`,
      lockPrefix: `${schema}.outbox`,
      descriptors: [ToolCreated],
      relayEveryMs: 60_000,
      relayAfterMs: 0,
      what: 'test events',
    });
  });
  afterAll(async () => {
    await ds?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await ds?.destroy();
    await svc?.close();
  });

  it('keeps nothing of a transaction that rolled back', async () => {
    const org = `ob-${randomUUID().slice(0, 8)}`;
    await expect(
      ds.transaction(async (m) => {
        await sut.stage(m, [event(org, 'never')]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await rows(org)).toEqual([]);
    expect(await sut.drain(org)).toBe(0);
  });

  it('publishes what committed, in commit order, once, and empties the table', async () => {
    const org = `ob-${randomUUID().slice(0, 8)}`;
    const first = event(org, 'one');
    await ds.transaction((m) => sut.stage(m, [first, event(org, 'two')]));
    await ds.transaction((m) => sut.stage(m, [event(org, 'three')]));
    expect(await rows(org)).toHaveLength(3);
    expect(await sut.drain(org)).toBe(3);
    expect(await rows(org)).toEqual([]);
    // The same message id again (a retried publish) is stored once.
    await ds.transaction((m) => sut.stage(m, [{ ...first, eventId: first.eventId }]).catch(() => undefined));
    await sut.drain(org);
    expect(await published(org)).toEqual(['one', 'two', 'three']);
  });

  it('lets the relay publish what a writer left behind (it committed, then died before draining)', async () => {
    const org = `ob-${randomUUID().slice(0, 8)}`;
    await ds.transaction((m) => sut.stage(m, [event(org, 'orphan')]));
    await sut.relay();
    expect(await rows(org)).toEqual([]);
    expect(await published(org)).toEqual(['orphan']);
  });
});
