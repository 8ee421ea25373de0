import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { EVENTS, EVENTS_STREAM, type EventDescriptor, type EventOf } from '@toolplane/contracts';

export interface EventsOptions {
  /** Entities to follow (`tool`, `mcp-server`, `connection`, `execution`, `agent-tools`, `toolset`); default all. */
  entities?: string[];
  /** Only events of this org (checked on the payload's `org_id`). */
  org?: string;
  /** Where to start: `new` (default), `all`, or a date. */
  from?: 'new' | 'all' | Date;
  signal?: AbortSignal;
  /**
   * Called once the subscription is in place (before the first event): with `from: 'new'`, every
   * event published after this is delivered. Start what you want to watch (e.g. a sync) then.
   */
  onReady?: () => void;
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
export function isEvent<D extends EventDescriptor>(e: ToolplaneEvent, d: D): e is ToolplaneEvent & { payload: EventOf<D> } {
  return e.subject === d.subject;
}

const bySubject = new Map(EVENTS.map((d) => [d.subject, d]));

function streamName(prefix: string): string {
  return prefix ? `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_${EVENTS_STREAM}` : EVENTS_STREAM;
}

/** Follows the events stream with an ordered (ephemeral) consumer; ends when `signal` aborts. */
export async function* subscribeEvents(nc: NatsConnection, prefix: string, opts: EventsOptions = {}): AsyncGenerator<ToolplaneEvent> {
  const p = prefix ? `${prefix}.` : '';
  // One filter subject (NATS 2.9 has no `filter_subjects`): several entities are filtered here.
  const entities = opts.entities?.length ? new Set(opts.entities) : undefined;
  const filter_subject = entities?.size === 1 ? `${p}toolplane.v1.events.${[...entities][0]}.*` : `${p}toolplane.v1.events.>`;
  const from = opts.from ?? 'new';
  const start =
    from === 'new' ? { deliver_policy: DeliverPolicy.New } : from === 'all' ? { deliver_policy: DeliverPolicy.All } : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from.toISOString() };
  const consumer = await jetstream(nc).consumers.get(streamName(prefix), { filter_subjects: filter_subject, ...start });
  const messages = await consumer.consume();
  opts.onReady?.();
  const stop = () => void messages.close();
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    if (opts.signal?.aborted) return;
    for await (const m of messages) {
      const subject = p && m.subject.startsWith(p) ? m.subject.slice(p.length) : m.subject;
      if (entities && !entities.has(subject.split('.')[3] ?? '')) continue;
      const descriptor = bySubject.get(subject);
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
