import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  APP_NAMES,
  EVENTS,
  EVENTS_STREAM,
  type AppName,
  type EventDescriptor,
  type EventOf,
} from '@toolplane/contracts';
import { ed25519PublicKeys } from '@toolplane/crypto';
import { EventVerifier, StaticPublisherKeys, type EventDropReason } from '@toolplane/messaging/event-signature';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface EventsOptions {
  /** Entities to follow (`tool`, `mcp-server`, `connection`, `execution`, `agent-tools`, `toolset`); default all. */
  entities?: string[];
  /** Only events of this org (checked on the payload's `org_id`). */
  org?: string;
  /**
   * Where to start: `new` (default), `all`, or a date. The history read from `all` or a date is
   * not checked for staleness (old events are expected); the live events once it has caught up are.
   */
  from?: 'new' | 'all' | Date;
  signal?: AbortSignal;
  /**
   * Called once the subscription is in place (before the first event): with `from: 'new'`, every
   * event published after this is delivered. Start what you want to watch (e.g. a sync) then.
   */
  onReady?: () => void;
  /**
   * The services' event verification keys (Ed25519, base64url) by app: what the deployment
   * publishes as `<app>.sign.pub` (the key directory, the ConfigMap toolplane-service-keys). Any
   * key of an app's list verifies (a rotated set). Or `keysDir`: a directory of those files.
   * Every event is checked against them (signed by an app its contract names as publisher, over
   * its subject, id, time and body); one that is not is dropped (counted in `onDropped`).
   */
  publisherKeys?: Partial<Record<AppName, readonly string[]>>;
  /** A directory holding `<app>.sign.pub` files (a SERVICE_KEYS_DIR, or the mounted ConfigMap). */
  keysDir?: string;
  /** `false`: hand on events without checking who published them (anyone on the bus can forge one). Default true. */
  verify?: boolean;
  /** Told of each event dropped because it is not signed by its owner. */
  onDropped?: (subject: string, reason: EventDropReason) => void;
}

/** One event of the stream, its payload checked against its descriptor. */
export interface ToolplaneEvent {
  /** The subject without the deployment prefix, e.g. `toolplane.v1.events.tool.created`. */
  subject: string;
  /** Its descriptor, when the contracts know the subject (else the payload is unchecked JSON). */
  descriptor?: EventDescriptor;
  payload: Record<string, unknown>;
  seq: number;
}

/** Narrows an event to a descriptor's payload type: `if (isEvent(e, McpServerProgressed)) e.payload.pages`. */
export function isEvent<D extends EventDescriptor>(
  e: ToolplaneEvent,
  d: D,
): e is ToolplaneEvent & { payload: EventOf<D> } {
  return e.subject === d.subject;
}

const bySubject = new Map(EVENTS.map((d) => [d.subject, d]));

function streamName(prefix: string): string {
  return prefix ? `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_${EVENTS_STREAM}` : EVENTS_STREAM;
}

/** The verifier of `opts`, or undefined with `verify: false`; throws when it verifies and was given no keys. */
function verifierOf(opts: EventsOptions): EventVerifier | undefined {
  if (opts.verify === false) return undefined;
  const keys: Partial<Record<AppName, ReturnType<typeof ed25519PublicKeys>>> = {};
  if (opts.keysDir) {
    for (const app of APP_NAMES) {
      try {
        keys[app] = ed25519PublicKeys(readFileSync(join(opts.keysDir, `${app}.sign.pub`), 'utf8'));
      } catch {
        // no key for that app: its events are dropped
      }
    }
  }
  for (const [app, list] of Object.entries(opts.publisherKeys ?? {}))
    keys[app as AppName] = [...(keys[app as AppName] ?? []), ...ed25519PublicKeys((list ?? []).join('\n'))];
  if (!Object.values(keys).some((k) => k?.length)) {
    throw new Error(
      "events are verified by default: give publisherKeys or keysDir (the services' <app>.sign.pub keys), or verify: false to trust the bus",
    );
  }
  return new EventVerifier(new StaticPublisherKeys(keys));
}

/**
 * Follows the events stream with an ordered (ephemeral) consumer; ends when `signal` aborts. Each
 * event is first checked for its publisher's signature (see `publisherKeys`, `verify`).
 */
export async function* subscribeEvents(
  nc: NatsConnection,
  prefix: string,
  opts: EventsOptions = {},
): AsyncGenerator<ToolplaneEvent> {
  const verifier = verifierOf(opts);
  const p = prefix ? `${prefix}.` : '';
  // One filter subject (NATS 2.9 has no `filter_subjects`): several entities are filtered here.
  const entities = opts.entities?.length ? new Set(opts.entities) : undefined;
  const filter_subject =
    entities?.size === 1 ? `${p}toolplane.v1.events.${[...entities][0]}.*` : `${p}toolplane.v1.events.>`;
  const from = opts.from ?? 'new';
  const start =
    from === 'new'
      ? { deliver_policy: DeliverPolicy.New }
      : from === 'all'
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from.toISOString() };
  const consumer = await jetstream(nc).consumers.get(streamName(prefix), { filter_subjects: filter_subject, ...start });
  // A read of the history (from: all or a date) takes old events without the staleness check until
  // it has caught up: then what comes is live, and an old signed event put on the stream now (a
  // replay) is stale. Caught up: nothing was pending when the consumer was made (its info, no
  // request), or a delivered message left nothing pending.
  let history = from !== 'new' && (await consumer.info(true)).num_pending > 0;
  const messages = await consumer.consume();
  opts.onReady?.();
  const stop = () => void messages.close();
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    if (opts.signal?.aborted) return;
    for await (const m of messages) {
      // This message is of the history when the last one left some pending (counted before the entity filter below).
      const ofHistory = history;
      if (m.info.pending === 0) history = false;
      const subject = p && m.subject.startsWith(p) ? m.subject.slice(p.length) : m.subject;
      if (entities && !entities.has(subject.split('.')[3] ?? '')) continue;
      const descriptor = bySubject.get(subject);
      if (verifier) {
        // An event the contracts do not know has no owner to check: dropped.
        const verdict = descriptor
          ? verifier.verify(descriptor.publishedBy, m.subject, m.headers, m.data, { history: ofHistory, seq: m.seq })
          : ({ ok: false, reason: 'not_owner' } as const);
        if (!verdict.ok) {
          opts.onDropped?.(subject, verdict.reason);
          continue;
        }
      }
      let payload: Record<string, unknown>;
      try {
        const json = m.json<Record<string, unknown>>();
        payload = descriptor ? (descriptor.payload.parse(json) as Record<string, unknown>) : json;
      } catch {
        continue; // not an event of this contract version: skipped rather than ending the stream
      }
      if (opts.org && payload.org_id !== opts.org) continue;
      yield { subject, descriptor, payload, seq: m.seq };
    }
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    await messages.close();
  }
}
