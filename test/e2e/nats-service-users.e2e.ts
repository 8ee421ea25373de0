/**
 * Each service's NATS user sends only what that service sends (issue 29, item 3), on a real
 * nats-server running the generated authorization. The table is derived from the contracts — the
 * events each app publishes (`publishedBy`), the public requests it sends (PUBLIC_REQUESTS_SENT),
 * the internal ones naming it in `callers`, the events it reads (EVENTS_READ) — not from the
 * generator, so it grows with them and checks the generator against them. Nothing serves here:
 * an allowed request gets "no responders" (or JetStream's answer), a refused one the server's
 * permissions violation.
 */
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  APP_NAMES,
  EVENTS,
  EVENTS_READ,
  EVENTS_READ_BY_EVERY_APP,
  EVENTS_STREAM,
  INTERNAL_EVENTS,
  MCP_EVENTS_STREAM,
  PUBLIC_REQUESTS_SENT,
  REQUEST_CANCELS,
  REQUESTS,
  WORK_QUEUES,
  type AppName,
  type EventDescriptor,
} from '@toolplane/contracts';
import { ensureEventsStream, ensureStream, streamName } from '@toolplane/messaging';
import { expectEventually } from '@toolplane/testing';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentUser, natsServerConfig } from '../../tools/deploy/nats-config';
import { freePort, stopProcess } from '../support/stack';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';
const VIOLATION = /Permissions Violation for Publish/;

const CANCELS = new Set(APP_NAMES.map((a) => REQUEST_CANCELS[a].subject));
const isCancel = (e: EventDescriptor) => CANCELS.has(e.subject);

/** What `app` sends, by the contracts. */
function sends(app: AppName): { requests: string[]; events: string[] } {
  const requests = [
    ...PUBLIC_REQUESTS_SENT[app],
    ...REQUESTS.filter((d) => d.visibility === 'internal' && d.callers!.includes(app)),
  ];
  const cancels = APP_NAMES.filter((to) => requests.some((d) => d.servedBy === to)).map((to) => REQUEST_CANCELS[to]);
  const events = [...EVENTS, ...INTERNAL_EVENTS].filter((e) => !isCancel(e) && e.publishedBy.includes(app));
  return { requests: requests.map((d) => d.subject), events: [...events, ...cancels].map((e) => e.subject) };
}

/** What `app` never sends: every other request and every event it does not publish (cancels to apps it never calls included). */
function neverSends(app: AppName): string[] {
  const { requests, events } = sends(app);
  const all = [
    ...REQUESTS.map((d) => d.subject),
    ...EVENTS.map((e) => e.subject),
    ...INTERNAL_EVENTS.map((e) => e.subject),
    ...WORK_QUEUES.map((w) => w.subject),
  ];
  const work = WORK_QUEUES.filter((w) => w.servedBy === app).map((w) => w.subject);
  return all.filter((s) => !requests.includes(s) && !events.includes(s) && !work.includes(s));
}

describe('each service’s NATS user sends only what the service sends (generated authorization, real nats-server)', () => {
  const prefix = `nsu${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'tp-nats-users-'));
  const passwords = Object.fromEntries(
    [...APP_NAMES, agentUser('runtime')].map((u) => [u, randomBytes(12).toString('hex')]),
  );
  let server: ChildProcess;
  let url: string;
  const p = (s: string) => `${prefix}.${s}`;
  const as = (user: AppName): Promise<NatsConnection> =>
    connect({ servers: url, user, pass: passwords[user], inboxPrefix: `_INBOX.${user}`, noAsyncTraces: true });
  /** The server's answer to one publish: its permissions violation, or what came back (no responders, JetStream's reply). */
  const attempt = (nc: NatsConnection, subject: string): Promise<string> =>
    nc.request(subject, '{}', { timeout: 10_000 }).then(
      (m) => `answered ${m.string().slice(0, 80)}`,
      (e: Error) => e.message,
    );

  beforeAll(async () => {
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    writeFileSync(join(dir, 'toolplane-auth.conf'), natsServerConfig({ prefix, passwords }));
    writeFileSync(
      join(dir, 'nats-server.conf'),
      `listen: 127.0.0.1:${port}\njetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }\ninclude ./toolplane-auth.conf\n`,
    );
    server = spawn(NATS_SERVER, ['-c', join(dir, 'nats-server.conf')], { stdio: 'ignore' });
    await expectEventually(async () => (await as('schema')).close(), { timeoutMs: 20_000, intervalMs: 100 });
  });
  afterAll(async () => {
    if (server) await stopProcess(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('derives a table that covers every app and refuses web-tools and the runners every event and public request', () => {
    for (const app of ['web-tools', 'runner-local', 'runner-e2b', 'runner-modal'] as const) {
      // Only the cancels of the requests it makes (auth-state.get to credentials).
      expect([app, sends(app).events.filter((s) => !CANCELS.has(s))]).toEqual([app, []]);
      expect([app, sends(app).requests.filter((s) => s.startsWith('toolplane.v1.'))]).toEqual([app, []]);
    }
    // Every public event is someone's, and refused to everyone else.
    for (const e of EVENTS)
      expect(APP_NAMES.filter((a) => !neverSends(a).includes(e.subject))).toEqual([...e.publishedBy]);
  });

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: publishing an event it does not own or a request it never makes is refused by the server',
    async (app: AppName) => {
      const nc = await as(app);
      try {
        const subjects = neverSends(app);
        expect(subjects.length).toBeGreaterThan(20);
        const answers = await Promise.all(subjects.map(async (s) => [s, await attempt(nc, p(s))] as const));
        expect(answers.filter(([, a]) => !VIOLATION.test(a))).toEqual([]);
      } finally {
        await nc.close();
      }
    },
  );

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: what it sends (its requests, their cancels, its events) is let through',
    async (app: AppName) => {
      const nc = await as(app);
      try {
        const { requests, events } = sends(app);
        const answers = await Promise.all(
          [...requests, ...events].map(async (s) => [s, await attempt(nc, p(s))] as const),
        );
        // Nothing serves these subjects here: the server lets them through and says no one answers.
        expect(answers.filter(([, a]) => VIOLATION.test(a) || !/no responders|503/i.test(a))).toEqual([]);
      } finally {
        await nc.close();
      }
    },
  );

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: reads only the events it reads, and no other app’s inbox',
    async (app: AppName) => {
      const nc = await as(app);
      try {
        const refused = async (subject: string) => {
          const sub = nc.subscribe(subject);
          const closed = sub.closed.then((e) => (e ? e.message : 'closed without error'));
          await nc.flush();
          // An allowed subscription stays open: give the server's answer a round trip, then close it ourselves.
          const verdict = await Promise.race([
            closed,
            nc
              .flush()
              .then(() => nc.flush())
              .then(() => 'open'),
          ]);
          sub.unsubscribe();
          return verdict;
        };
        for (const e of [...EVENTS_READ_BY_EVERY_APP, ...EVENTS_READ[app]])
          expect([e.subject, await refused(p(e.subject))]).toEqual([e.subject, 'open']);
        const unread = EVENTS.filter((e) => !EVENTS_READ[app].includes(e));
        for (const subject of [
          p('toolplane.v1.events.>'),
          p('toolplane.internal.v1.events.>'),
          ...unread.map((e) => p(e.subject)),
          '_INBOX.>',
          `_INBOX.${app === 'executor' ? 'registry' : 'executor'}.>`,
        ]) {
          expect([subject, await refused(subject)]).toEqual([
            subject,
            expect.stringMatching(/Permissions Violation for Subscription/),
          ]);
        }
      } finally {
        await nc.close();
      }
    },
  );

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: the JetStream API of what it keeps, and nothing else',
    async (app: AppName) => {
      const nc = await as(app);
      try {
        const events = streamName(prefix, EVENTS_STREAM);
        const ownsEvents = EVENTS.some((e) => e.publishedBy.includes(app));
        const ownWork = WORK_QUEUES.filter((w) => w.servedBy === app).map((w) => streamName(prefix, w.stream));
        const otherWork = WORK_QUEUES.filter((w) => w.servedBy !== app).map((w) => streamName(prefix, w.stream));
        const refused = [
          '$JS.API.STREAM.NAMES',
          '$JS.API.STREAM.LIST',
          `$JS.API.STREAM.DELETE.${events}`,
          `$JS.API.STREAM.PURGE.${events}`,
          `$JS.API.STREAM.UPDATE.${events}`,
          `$JS.API.CONSUMER.CREATE.${events}`,
          `$JS.API.CONSUMER.DURABLE.CREATE.${events}.x`,
          ...(app === 'mcp-gateway' ? [] : [`$JS.API.STREAM.INFO.${streamName(prefix, MCP_EVENTS_STREAM)}`]),
          ...(ownsEvents ? [] : [`$JS.API.STREAM.INFO.${events}`, `$JS.API.STREAM.CREATE.${events}`]),
          ...ownWork.flatMap((w) => [
            `$JS.API.STREAM.DELETE.${w}`,
            `$JS.API.STREAM.PURGE.${w}`,
            `$JS.API.CONSUMER.DELETE.${w}.${app}`,
            `$JS.API.CONSUMER.CREATE.${w}.other`,
          ]),
          ...otherWork.flatMap((w) => [
            `$JS.API.STREAM.INFO.${w}`,
            `$JS.API.CONSUMER.MSG.NEXT.${w}.executor`,
            `$JS.ACK.${w}.executor.1.1.1.1.0`,
          ]),
        ];
        const answers = await Promise.all(refused.map(async (s) => [s, await attempt(nc, s)] as const));
        expect(answers.filter(([, a]) => !VIOLATION.test(a))).toEqual([]);
        // Its own: the events stream made (if missing) and an event appended, acknowledged by the stream.
        if (ownsEvents) {
          expect(await ensureEventsStream(nc, prefix)).toBe(events);
          const mine = EVENTS.find((e) => e.publishedBy.includes(app))!;
          expect(
            (await jetstream(nc).publish(p(mine.subject), '{}', { msgID: randomBytes(8).toString('hex') })).stream,
          ).toBe(events);
        }
        // Its work queue: made, its durable consumer made and read, a message queued, taken and acknowledged.
        for (const w of WORK_QUEUES.filter((q) => q.servedBy === app)) {
          const stream = streamName(prefix, w.stream);
          await ensureStream(nc, { name: stream, subjects: [p(w.subject)], retention: RetentionPolicy.Workqueue });
          const jsm = await jetstreamManager(nc);
          await jsm.consumers.add(stream, {
            durable_name: app,
            ack_policy: AckPolicy.Explicit,
            filter_subject: p(w.subject),
          });
          expect((await jsm.consumers.info(stream, app)).name).toBe(app);
          await jetstream(nc).publish(p(w.subject), '{"n":1}');
          const m = await (await jetstream(nc).consumers.get(stream, app)).next({ expires: 5000 });
          expect(m?.json()).toEqual({ n: 1 });
          expect(await m!.ackAck()).toBe(true);
        }
      } finally {
        await nc.close();
      }
    },
  );
});
