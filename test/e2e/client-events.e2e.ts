/**
 * @toolplane/client verifies events by default (issue 29 A): with the services' keys (a key
 * directory's `<app>.sign.pub`, or keys given by app, a rotated set) it hands on only events signed
 * by their owner and drops the rest (told to onDropped); without keys it refuses to start unless
 * told `verify: false`. On the real JetStream events stream of a prefix of its own, no services.
 */
import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { ToolplaneClient, type ToolplaneEvent } from '@toolplane/client';
import { ToolDeleted } from '@toolplane/contracts';
import { eventSigningKey, generateX25519 } from '@toolplane/crypto';
import { ensureEventsStream, EventSigner } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsUrl } from '../support/env';
import { ensureTestIdentity, signedEventHeaders } from '../support/identity';

/** A tool.deleted payload of `org` (the org tells the events apart). */
/** Deletes a case's own events stream and closes its connection. */
async function dropStreamAndClose(nc: NatsConnection, prefix: string): Promise<void> {
  await jetstream(nc)
    .jetstreamManager()
    .then((m) => m.streams.delete(`${prefix}_TOOLPLANE_EVENTS`))
    .catch(() => undefined);
  await nc.close();
}

const body = (org: string) =>
  new TextEncoder().encode(
    JSON.stringify({
      event_id: randomUUID(),
      occurred_at: new Date().toISOString(),
      org_id: org,
      tool_id: 'tool-00000000-0000-4000-8000-0000000000c1',
      tool_name: 'x',
    }),
  );

describe('@toolplane/client events: verified by default', () => {
  const prefix = `cev${randomUUID().slice(0, 8)}`;
  const subject = `${prefix}.${ToolDeleted.subject}`;
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect({ servers: natsUrl(), name: 'client-events-e2e' });
    await ensureEventsStream(nc, prefix);
    const js = jetstream(nc);
    // Into the stream: unsigned, signed by a key nobody owns, signed by an app that does not own it, then the registry's own.
    await js.publish(subject, body('forged-plain'));
    const h = natsHeaders();
    new EventSigner('registry', eventSigningKey(generateX25519().seed).privateKey).sign(
      h,
      subject,
      randomUUID(),
      body('forged-key'),
    );
    await js.publish(subject, body('forged-key'), { headers: h });
    const other = body('not-owner');
    await js.publish(subject, other, { headers: signedEventHeaders('executor', subject, other) });
    const genuine = body('genuine');
    await js.publish(subject, genuine, { headers: signedEventHeaders('registry', subject, genuine) });
  });
  afterAll(() => dropStreamAndClose(nc, prefix));

  const read = async (opts: Parameters<ToolplaneClient['events']>[0], n: number) => {
    const client = await ToolplaneClient.connect({ nats: nc, prefix });
    const ac = new AbortController();
    const out: ToolplaneEvent[] = [];
    for await (const e of client.events({ from: 'all', signal: ac.signal, ...opts })) {
      out.push(e);
      if (out.length >= n) break;
    }
    return out.map((e) => e.payload.org_id);
  };

  it('hands on only the owner-signed event from a key directory, and says why the others were dropped', async () => {
    const dropped: string[] = [];
    expect(
      await read({ keysDir: ensureTestIdentity().keysDir, onDropped: (_s, reason) => dropped.push(reason) }, 1),
    ).toEqual(['genuine']);
    expect(dropped.sort()).toEqual(['bad_signature', 'not_owner', 'unsigned']);
  });

  it('takes keys by app, any key of a rotated set', async () => {
    const registry = readFileSync(join(ensureTestIdentity().keysDir, 'registry.sign.pub'), 'utf8').trim();
    const rotated = eventSigningKey(generateX25519().seed).publicKey;
    expect(await read({ publisherKeys: { registry: [rotated, registry] } }, 1)).toEqual(['genuine']);
  });

  it('refuses to start without keys, and hands on everything with verify: false', async () => {
    await expect(read({}, 1)).rejects.toThrow(/verified by default/);
    expect(await read({ verify: false }, 4)).toEqual(['forged-plain', 'forged-key', 'not-owner', 'genuine']);
  });
});

/**
 * A history read (from: all or a date) takes old events without the staleness check only until it
 * has caught up: an event signed long ago (a genuine signature, replayed) put on the stream after
 * that is dropped as stale, as a live read drops it.
 */
describe('@toolplane/client events: live after the history has caught up', () => {
  const prefix = `cel${randomUUID().slice(0, 8)}`;
  const subject = `${prefix}.${ToolDeleted.subject}`;
  const tenMinutesAgo = () => Date.now() - 600_000;
  let nc: NatsConnection;

  /** Publishes a tool.deleted of `org` signed by the registry's real key at `signedAt`. */
  const publish = async (org: string, signedAt?: number) => {
    const data = body(org);
    const realNow = Date.now;
    if (signedAt !== undefined) Date.now = () => signedAt;
    let h: MsgHdrs;
    try {
      h = signedEventHeaders('registry', subject, data);
    } finally {
      Date.now = realNow;
    }
    await jetstream(nc).publish(subject, data, { headers: h });
  };

  /** The orgs handed on, reading `from` until `last` comes, and the reasons of the drops. */
  const read = async (from: 'all' | Date, last: string, onReady?: () => void) => {
    const client = await ToolplaneClient.connect({ nats: nc, prefix });
    const dropped: string[] = [];
    const out: string[] = [];
    const events = client.events({
      from,
      keysDir: ensureTestIdentity().keysDir,
      onDropped: (_s, reason) => dropped.push(reason),
      onReady,
    });
    for await (const e of events) {
      const org = e.payload.org_id as string;
      out.push(org);
      // Caught up with the one event of the history: what is published now comes live.
      if (org === 'history-old') {
        await publish('live-old', tenMinutesAgo());
        await publish('live-new');
      }
      if (org === last) break;
    }
    return { out, dropped };
  };

  beforeAll(async () => {
    nc = await connect({ servers: natsUrl(), name: 'client-events-live-e2e' });
    await ensureEventsStream(nc, prefix);
    await publish('history-old', tenMinutesAgo());
  });
  afterAll(() => dropStreamAndClose(nc, prefix));

  it('takes an old event of the history, then drops one signed as long ago that comes after it', async () => {
    expect(await read('all', 'live-new')).toEqual({ out: ['history-old', 'live-new'], dropped: ['stale'] });
  });

  it('checks the time from the first event when there was no history to catch up with (a date of now)', async () => {
    let published: Promise<void> | undefined;
    const r = await read(new Date(), 'now-new', () => {
      published = publish('now-old', tenMinutesAgo()).then(() => publish('now-new'));
    });
    await published;
    expect(r).toEqual({ out: ['now-new'], dropped: ['stale'] });
  });
});
