import { EVENTS, REQUESTS, WORK_QUEUES } from '@toolplane/contracts';
import { code, table } from './markdown';

const apps = (names: readonly string[] | undefined): string => (names?.length ? names.map(code).join(', ') : '');

/** Every subject of the contracts: requests (public and internal), events and work queues, with who serves, publishes and may call each. */
export function subjectsDoc(): string {
  const requests = (visibility: 'public' | 'internal') =>
    table(
      ['subject', 'served by', visibility === 'public' ? 'scope' : 'callers', 'what it does'],
      REQUESTS.filter((d) => d.visibility === visibility).map((d) => [
        code(d.subject),
        code(d.servedBy),
        visibility === 'public' ? code(d.scope ?? '') : apps(d.callers),
        d.summary,
      ]),
    );
  const events = table(
    ['subject', 'published by', 'delivery', 'what it says'],
    EVENTS.map((e) => [
      code(e.subject),
      apps(e.publishedBy),
      e.sealed
        ? `sealed to ${code(e.sealed.to)} (core NATS)`
        : e.subject.startsWith('toolplane.internal.')
          ? 'core NATS'
          : 'JetStream `TOOLPLANE_EVENTS`',
      e.summary,
    ]),
  );
  const queues = table(
    ['subject', 'stream', 'served by', 'what it carries'],
    WORK_QUEUES.map((q) => [code(q.subject), code(q.stream), code(q.servedBy), q.summary]),
  );
  return [
    `## Public requests (${REQUESTS.filter((d) => d.visibility === 'public').length})`,
    'An org token with the scope named here (`authorization: Bearer …`).',
    requests('public'),
    `## Internal requests (${REQUESTS.filter((d) => d.visibility === 'internal').length})`,
    'Service-only and sealed: only the apps named as callers may send them.',
    requests('internal'),
    `## Events (${EVENTS.length})`,
    "Only the apps named here may publish an event (its descriptor's `publishedBy`).",
    events,
    `## Work queues (${WORK_QUEUES.length})`,
    queues,
  ].join('\n\n');
}
