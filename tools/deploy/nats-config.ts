/**
 * The NATS server authorization Toolplane ships, generated from libs/contracts so it can never
 * drift from the subjects: one user per app, allowed to subscribe only to the subjects it serves
 * (so only runner-local can take runner calls) and to publish only where it calls; one role for
 * agent runtimes, which may publish public requests and read nothing but their own replies.
 *
 *   node dist/tools/deploy/nats-config.js [--prefix P] [--agent NAME ...] [--out FILE]
 *
 * Passwords are environment references ($NATS_PASSWORD_<APP>, $NATS_PASSWORD_AGENT_<NAME>) that
 * the nats-server process resolves at start, so the file itself holds no secret.
 */
import {
  APP_NAMES,
  EVENTS_SUBJECTS,
  INTERNAL_EVENTS_SUBJECTS,
  MAX_PROGRESS_MESSAGES,
  MCP_EVENTS_STREAM,
  MCP_EVENTS_SUBJECTS,
  MCP_SESSIONS_BUCKET,
  PUBLIC_SUBJECTS,
  REQUESTS,
  WORK_QUEUES,
  type AppName,
} from '@toolplane/contracts';
import { streamName } from '@toolplane/messaging';
import { writeFileSync } from 'node:fs';

export interface NatsConfigOptions {
  /** SUBJECT_PREFIX of the deployment ('' in production). */
  prefix?: string;
  /** Agent runtime users: each gets the agent role and its own inbox `_INBOX.<name>`. */
  agents?: string[];
  /** Literal passwords (tests); default: `$NATS_PASSWORD_<NAME>` environment references. */
  passwords?: Record<string, string>;
}

/** Apps that own a JetStream stream (they create it and publish events with acks). */
const STREAM_OWNERS: readonly AppName[] = ['registry', 'mcp-sync', 'executor'];

/**
 * Apps that keep NATS KV buckets of their own (they create them), without the stream owners'
 * `$JS.API.>`: the JetStream API of each bucket's stream only — create it if missing
 * (STREAM.CREATE), read its state (STREAM.INFO, the readiness check), read a key (DIRECT.GET, or
 * STREAM.MSG.GET where direct gets are off), and `$JS.API.INFO` (the client checks JetStream is
 * there) — and its keys (`$KV.<bucket>.>`: a put or delete is a publish there, acknowledged on the
 * app's inbox). Not granted: deleting, purging or updating any stream, consumers, other buckets.
 */
const KV_BUCKETS: Partial<Record<AppName, readonly string[]>> = { 'mcp-gateway': [MCP_SESSIONS_BUCKET] };

/**
 * Apps that keep a JetStream stream of their own without the stream owners' `$JS.API.>`: its
 * subjects (to append), and the API of that stream only — create it if missing, read its state,
 * read the last message of a subject (STREAM.MSG.GET), and ordered consumers on it (create, pull,
 * read, delete an ephemeral consumer). Not granted: deleting, purging or updating the stream,
 * durable consumers, any other stream.
 */
const OWN_STREAMS: Partial<Record<AppName, ReadonlyArray<{ stream: string; subjects: string }>>> = {
  'mcp-gateway': [{ stream: MCP_EVENTS_STREAM, subjects: MCP_EVENTS_SUBJECTS }],
};

/**
 * Apps that never publish a public event: publishing one is refused, as for agent runtimes, so a
 * compromise of the HTTP edge cannot forge an event other services act on.
 */
const NO_PUBLIC_EVENTS: readonly AppName[] = ['mcp-gateway'];

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

export function natsServerConfig(o: NatsConfigOptions = {}): string {
  const p = (s: string) => (o.prefix ? `${o.prefix}.${s}` : s);
  const password = (user: string) => (o.passwords?.[user] !== undefined ? JSON.stringify(o.passwords[user]) : `$NATS_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`);
  const list = (xs: string[]) => `[${[...new Set(xs)].map((x) => JSON.stringify(x)).join(', ')}]`;
  const lines: string[] = [
    '# Generated by tools/deploy/nats-config.ts from libs/contracts: do not edit by hand.',
    '# npm run nats:config  (and see deploy/README.md, "NATS users and permissions")',
    'authorization {',
    '  users = [',
  ];
  for (const app of APP_NAMES) {
    const serves = REQUESTS.filter((d) => d.servedBy === app).map((d) => p(d.subject));
    const calls = REQUESTS.filter((d) => d.visibility === 'internal' && d.callers!.includes(app)).map((d) => p(d.subject));
    // A work queue's consumer app publishes its messages and acknowledges them ($JS.ACK).
    const work = WORK_QUEUES.filter((w) => w.servedBy === app);
    const publish = [
      p(PUBLIC_SUBJECTS),
      ...calls,
      p(INTERNAL_EVENTS_SUBJECTS),
      ...(STREAM_OWNERS.includes(app) ? ['$JS.API.>'] : []),
      ...work.map((w) => p(w.subject)),
      ...(work.length ? ['$JS.ACK.>'] : []),
      ...(KV_BUCKETS[app] ?? []).flatMap((b) => kvPublish(o.prefix ?? '', b)),
      ...(OWN_STREAMS[app] ?? []).flatMap((s) => streamPublish(o.prefix ?? '', s)),
    ];
    const deny = NO_PUBLIC_EVENTS.includes(app) ? [p(EVENTS_SUBJECTS)] : [];
    const subscribe = [...serves, p(EVENTS_SUBJECTS), p(INTERNAL_EVENTS_SUBJECTS), `_INBOX.${app}.>`];
    lines.push(
      serves.length
        ? `    # ${app}: serves ${serves.length} subject(s); replies (and progress) go back on the caller's inbox (allow_responses)`
        : `    # ${app}: serves no subject (no allow_responses)${KV_BUCKETS[app] ? `; its KV bucket(s) ${KV_BUCKETS[app]!.join(', ')}${OWN_STREAMS[app] ? ` and stream(s) ${OWN_STREAMS[app]!.map((s) => s.stream).join(', ')}` : ''} and no other JetStream` : ''}${deny.length ? '; publishes no public event' : ''}`,
      `    { user: ${JSON.stringify(app)}, password: ${password(app)}, permissions: {`,
      `        publish: { allow: ${list(publish)}${deny.length ? `, deny: ${list(deny)}` : ''} }`,
      `        subscribe: { allow: ${list(subscribe)} }`,
      ...(serves.length ? [`        allow_responses: ${ALLOW_RESPONSES}`] : []),
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
