/**
 * The NATS server authorization Toolplane ships, generated from libs/contracts so it can never
 * drift from the subjects: one user per app, which may send only what that app sends — the requests
 * it makes, their cancels, the events it owns, the JetStream API of the streams it keeps — and
 * subscribe only to what it serves, the events it reads and its own inbox (so only runner-local can
 * take runner calls, and a compromised web-tools can forge no event and send no public request); one
 * role for agent runtimes, which may publish public requests and read nothing but their own replies.
 *
 *   node dist/tools/deploy/nats-config.js [--prefix P] [--agent NAME ...] [--out FILE]
 *
 * Passwords are environment references ($NATS_PASSWORD_<APP>, $NATS_PASSWORD_AGENT_<NAME>) that
 * the nats-server process resolves at start, so the file itself holds no secret.
 */
import {
  APP_NAMES,
  EVENTS,
  EVENTS_READ,
  EVENTS_READ_BY_EVERY_APP,
  EVENTS_STREAM,
  EVENTS_SUBJECTS,
  INTERNAL_EVENTS,
  MAX_PROGRESS_MESSAGES,
  MCP_EVENTS_STREAM,
  MCP_EVENTS_SUBJECTS,
  MCP_SESSIONS_BUCKET,
  PUBLIC_REQUESTS_SENT,
  PUBLIC_SUBJECTS,
  REQUEST_CANCELS,
  REQUESTS,
  WORK_QUEUES,
  type AppName,
  type EventDescriptor,
} from '@toolplane/contracts';
import { streamName, withPrefix } from '@toolplane/messaging';
import { writeFileSync } from 'node:fs';

export interface NatsConfigOptions {
  /** SUBJECT_PREFIX of the deployment ('' in production). */
  prefix?: string;
  /** Agent runtime users: each gets the agent role and its own inbox `_INBOX.<name>`. */
  agents?: string[];
  /** Literal passwords (tests); default: `$NATS_PASSWORD_<NAME>` environment references. */
  passwords?: Record<string, string>;
}

/**
 * Apps that keep NATS KV buckets of their own (they create them): the JetStream API of each
 * bucket's stream only — create it if missing (STREAM.CREATE), read its state (STREAM.INFO, the
 * readiness check), read a key (DIRECT.GET, or STREAM.MSG.GET where direct gets are off), and
 * `$JS.API.INFO` (the client checks JetStream is there) — and its keys (`$KV.<bucket>.>`: a put or
 * delete is a publish there, acknowledged on the app's inbox). Not granted: deleting, purging or
 * updating any stream, consumers, other buckets.
 */
const KV_BUCKETS: Partial<Record<AppName, readonly string[]>> = { 'mcp-gateway': [MCP_SESSIONS_BUCKET] };

/**
 * Apps that keep a JetStream stream of their own that is not a contract's (events stream, work
 * queue): its subjects (to append), and the API of that stream only — create it if missing, read
 * its state, read the last message of a subject (STREAM.MSG.GET), and ordered consumers on it
 * (create, pull, read, delete an ephemeral consumer). Not granted: deleting, purging or updating
 * the stream, durable consumers, any other stream.
 */
const OWN_STREAMS: Partial<Record<AppName, ReadonlyArray<{ stream: string; subjects: string }>>> = {
  'mcp-gateway': [{ stream: MCP_EVENTS_STREAM, subjects: MCP_EVENTS_SUBJECTS }],
};

function kvPublish(prefix: string, bucket: string): string[] {
  const name = streamName(prefix, bucket);
  const stream = `KV_${name}`;
  return [
    '$JS.API.INFO',
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$KV.${name}.>`,
  ];
}

function streamPublish(prefix: string, own: { stream: string; subjects: string }): string[] {
  const name = streamName(prefix, own.stream);
  return [
    prefix ? `${prefix}.${own.subjects}` : own.subjects,
    '$JS.API.INFO',
    `$JS.API.STREAM.INFO.${name}`,
    `$JS.API.STREAM.CREATE.${name}`,
    `$JS.API.STREAM.MSG.GET.${name}`,
    `$JS.API.CONSUMER.CREATE.${name}`,
    `$JS.API.CONSUMER.CREATE.${name}.>`,
    `$JS.API.CONSUMER.INFO.${name}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${name}.>`,
    `$JS.API.CONSUMER.DELETE.${name}.>`,
  ];
}

/**
 * The API of a stream an app makes if it is missing (ensureStream: STREAM.INFO, then
 * STREAM.CREATE), and `$JS.API.INFO` (jetstreamManager checks JetStream is there). Publishing to
 * its subjects is granted with the events or work it sends; the stream's acks come back on the
 * app's inbox. Not granted: deleting, purging or updating it, reading its messages, consumers.
 */
function streamOwnerPublish(stream: string): string[] {
  return ['$JS.API.INFO', `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`];
}

/**
 * A work queue's one durable pull consumer, named after the app that serves it (ensureWorkStream,
 * the pull loop): create it if missing (CONSUMER.CREATE with its filter on NATS ≥ 2.9, the older
 * DURABLE.CREATE), read its state, pull (MSG.NEXT), and acknowledge, nak or extend a message
 * (`$JS.ACK.<stream>.<consumer>.…`, and the newer ack subject's form with domain and account hash).
 */
function durableConsumerPublish(stream: string, consumer: string): string[] {
  return [
    `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
    `$JS.API.CONSUMER.CREATE.${stream}.${consumer}`,
    `$JS.API.CONSUMER.CREATE.${stream}.${consumer}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${consumer}`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
    `$JS.ACK.*.*.${stream}.${consumer}.>`,
  ];
}

/**
 * Messages a service may send to one request's reply subject: its progress reports
 * (MAX_PROGRESS_MESSAGES at most) and the reply. `expires` is nats-server's default, written out:
 * a reply later than that is refused (as it was with `allow_responses: true`). Cost on the NATS
 * server: with `max` above 1 an answered request keeps its entry in the responder connection's
 * reply-permission map until `expires` (with max 1 the reply used it up), and past 4,096 entries
 * nats-server scans that map on each new request: CPU on the NATS server grows with a replica's
 * request rate × `expires`.
 */
export const ALLOW_RESPONSES = `{ max: ${MAX_PROGRESS_MESSAGES + 1}, expires: "2m" }`;

export function agentUser(name: string): string {
  return `agent-${name}`;
}

/** What one app's NATS user may do, and why (the comment above the user in the file). */
export interface AppPermissions {
  publish: string[];
  subscribe: string[];
  /** Whether it serves requests (allow_responses). */
  serves: boolean;
  /** What it serves, sends, publishes, reads and keeps: one clause a line. */
  comment: string[];
}

/**
 * One app's permissions, from the contracts: it publishes the requests it makes (the public ones of
 * PUBLIC_REQUESTS_SENT, the internal ones naming it in `callers`), the cancels of those requests
 * (REQUEST_CANCELS of the apps serving them), the events it publishes (`publishedBy`: public ones
 * into the events stream, internal broadcasts), its work-queue messages, and the JetStream API of
 * the streams, consumers and buckets it keeps; it subscribes to the subjects it serves (and their
 * cancels), the sealed broadcasts addressed to it, the events it reads (EVENTS_READ), and its inbox.
 */
export function appPermissions(app: AppName, prefix = ''): AppPermissions {
  const p = (s: string) => withPrefix(prefix, s);
  const serves = REQUESTS.filter((d) => d.servedBy === app);
  const sent = [
    ...PUBLIC_REQUESTS_SENT[app],
    ...REQUESTS.filter((d) => d.visibility === 'internal' && d.callers!.includes(app)),
  ];
  const cancels = APP_NAMES.filter((to) => sent.some((d) => d.servedBy === to)).map((to) => REQUEST_CANCELS[to]);
  const isCancel = (e: EventDescriptor) => APP_NAMES.some((a) => REQUEST_CANCELS[a] === e);
  const events = EVENTS.filter((e) => e.publishedBy.includes(app));
  const broadcasts = INTERNAL_EVENTS.filter((e) => !isCancel(e) && e.publishedBy.includes(app));
  const work = WORK_QUEUES.filter((w) => w.servedBy === app);
  const eventsStream = streamName(prefix, EVENTS_STREAM);
  const publish = [
    ...sent.map((d) => p(d.subject)),
    ...cancels.map((e) => p(e.subject)),
    ...events.map((e) => p(e.subject)),
    ...broadcasts.map((e) => p(e.subject)),
    ...(events.length ? streamOwnerPublish(eventsStream) : []),
    ...work.flatMap((w) => [
      p(w.subject),
      ...streamOwnerPublish(streamName(prefix, w.stream)),
      ...durableConsumerPublish(streamName(prefix, w.stream), w.servedBy),
    ]),
    ...(KV_BUCKETS[app] ?? []).flatMap((b) => kvPublish(prefix, b)),
    ...(OWN_STREAMS[app] ?? []).flatMap((s) => streamPublish(prefix, s)),
  ];
  const sealedToMe = INTERNAL_EVENTS.filter((e) => e.sealed?.to === app && !isCancel(e));
  const reads = [...EVENTS_READ_BY_EVERY_APP, ...EVENTS_READ[app]];
  const subscribe = [
    ...serves.map((d) => p(d.subject)),
    ...(serves.length ? [p(REQUEST_CANCELS[app].subject)] : []),
    ...sealedToMe.map((e) => p(e.subject)),
    ...reads.map((e) => p(e.subject)),
    `_INBOX.${app}.>`,
  ];
  const jetstream = [
    ...(events.length ? [`the events stream ${eventsStream} (made if missing)`] : []),
    ...work.map((w) => `its work queue ${streamName(prefix, w.stream)} and durable consumer ${w.servedBy}`),
    ...(KV_BUCKETS[app] ?? []).map((b) => `its KV bucket ${streamName(prefix, b)}`),
    ...(OWN_STREAMS[app] ?? []).map((s) => `its stream ${streamName(prefix, s.stream)}`),
  ];
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const comment: string[] = [
    serves.length
      ? `serves ${count(serves.length, 'subject')}, replies and progress on the caller's inbox (allow_responses)`
      : 'serves no subject (no allow_responses)',
    `sends ${count(PUBLIC_REQUESTS_SENT[app].length, 'public request')} and ${count(sent.length - PUBLIC_REQUESTS_SENT[app].length, 'internal request')}${cancels.length ? ` (and their cancels)` : ''}`,
    events.length || broadcasts.length
      ? `publishes ${count(events.length, 'public event')} and ${count(broadcasts.length, 'internal broadcast')}, no other`
      : 'publishes no event',
    `reads ${count(reads.length + sealedToMe.length, 'event')}`,
    jetstream.length ? `JetStream: ${jetstream.join(', ')}, no other` : 'no JetStream',
  ];
  return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)], serves: serves.length > 0, comment };
}

export function natsServerConfig(o: NatsConfigOptions = {}): string {
  const p = (s: string) => (o.prefix ? `${o.prefix}.${s}` : s);
  const password = (user: string) =>
    o.passwords?.[user] !== undefined
      ? JSON.stringify(o.passwords[user])
      : `$NATS_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  const list = (xs: string[]) => `[${[...new Set(xs)].map((x) => JSON.stringify(x)).join(', ')}]`;
  const lines: string[] = [
    '# Generated by tools/deploy/nats-config.ts from libs/contracts: do not edit by hand.',
    '# npm run nats:config  (and see deploy/README.md, "NATS users and permissions")',
    '# Each service publishes only the requests it makes (public: PUBLIC_REQUESTS_SENT; internal: callers),',
    '# their cancels, the events it publishes (publishedBy) and the JetStream API of what it keeps; it',
    '# subscribes to what it serves, the events it reads (EVENTS_READ, sealed broadcasts to it) and its inbox.',
    'authorization {',
    '  users = [',
  ];
  for (const app of APP_NAMES) {
    const perm = appPermissions(app, o.prefix ?? '');
    lines.push(
      `    # ${app}: ${perm.comment[0]}`,
      ...perm.comment.slice(1).map((c) => `    #   ${c}`),
      `    { user: ${JSON.stringify(app)}, password: ${password(app)}, permissions: {`,
      `        publish: { allow: ${list(perm.publish)} }`,
      `        subscribe: { allow: ${list(perm.subscribe)} }`,
      ...(perm.serves ? [`        allow_responses: ${ALLOW_RESPONSES}`] : []),
      `    } }`,
    );
  }
  for (const agent of o.agents ?? ['runtime']) {
    const user = agentUser(agent);
    lines.push(
      `    # agent runtime ${agent}: public requests only; replies on its own inbox (connect with inboxPrefix "_INBOX.${user}")`,
      `    { user: ${JSON.stringify(user)}, password: ${password(user)}, permissions: {`,
      `        publish: { allow: ${list([p(PUBLIC_SUBJECTS)])}, deny: ${list([p(EVENTS_SUBJECTS)])} }`,
      `        subscribe: { allow: ${list([`_INBOX.${user}.>`])} }`,
      `    } }`,
    );
  }
  lines.push('  ]', '}', '');
  return lines.join('\n');
}

function main(argv: string[]): void {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const agents = argv.flatMap((a, i) => (a === '--agent' && argv[i + 1] ? [argv[i + 1]!] : []));
  const text = natsServerConfig({ prefix: value('--prefix') ?? '', agents: agents.length ? agents : undefined });
  const out = value('--out');
  if (out) writeFileSync(out, text);
  else process.stdout.write(text);
}

if (require.main === module) main(process.argv.slice(2));
