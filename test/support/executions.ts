import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { RawClient } from './nats-client';

/** Polls `read` until `done` holds for its value (never a fixed sleep); throws with the last value after `timeoutMs`. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, everyMs));
    last = await read();
  }
  return last;
}

/**
 * executions.get, polled until the record exists and `done` holds for it. A request lost on the
 * way (sent to an executor a test just killed) is asked again.
 */
export function recordOf(
  client: RawClient,
  org: string,
  executionId: string,
  done: (r: any) => boolean = () => true,
  timeoutMs = 60_000,
): Promise<any> {
  return eventually(
    () =>
      client
        .req('toolplane.v1.executions.get', { org_id: org, execution_id: executionId }, { timeoutMs: 5000 })
        .catch((e: Error) => ({ error: { code: e.name } })),
    (r) => !r.error && done(r),
    timeoutMs,
  );
}

const KINDS = ['completed', 'failed', 'held', 'approved', 'denied', 'expired'] as const;

/** A connection's running read of a prefix's execution events: everything delivered so far, in stream order. */
interface Feed {
  events: Array<{ kind: string; payload: any; seq: number }>;
  /** The stream sequence of the last event delivered (0: none yet). */
  seq: number;
  ready: Promise<void>;
}
const feeds = new WeakMap<object, Map<string, Feed>>();

/**
 * One ordered JetStream consumer per connection and prefix, reading the execution events from the
 * start of the run in batches and then as they come. (Reading them a message per request from
 * sequence 1 on every poll grew with the run: thousands of requests per poll late in a full run.)
 */
function feedOf(client: RawClient, prefix: string): Feed {
  let byPrefix = feeds.get(client.nc);
  if (!byPrefix) feeds.set(client.nc, (byPrefix = new Map()));
  const feed = byPrefix.get(prefix);
  if (feed) return feed;
  const f: Feed = { events: [], seq: 0, ready: Promise.resolve() };
  f.ready = (async () => {
    const consumer = await jetstream(client.nc).consumers.get(`${prefix}_TOOLPLANE_EVENTS`, {
      filter_subjects: `${prefix}.toolplane.v1.events.execution.*`,
    });
    const messages = await consumer.consume({ max_messages: 1000 });
    void (async () => {
      for await (const m of messages) {
        let payload: unknown;
        try {
          payload = m.json();
        } catch {
          payload = null;
        }
        f.events.push({ kind: m.subject.split('.').pop()!, payload, seq: m.seq });
        f.seq = m.seq;
      }
    })().catch(() => undefined);
  })();
  byPrefix.set(prefix, f);
  return f;
}

/**
 * The execution events of the run's stream for these executions (subject tail and payload), in
 * stream order: every one stored when it is called (it waits until its read has reached the last
 * stored execution event).
 */
export async function executionEvents(
  client: RawClient,
  prefix: string,
  executionIds: readonly string[],
): Promise<Array<{ kind: string; payload: any }>> {
  const feed = feedOf(client, prefix);
  await feed.ready;
  const jsm = await jetstreamManager(client.nc);
  const stream = `${prefix}_TOOLPLANE_EVENTS`;
  const lasts = await Promise.all(
    KINDS.map((k) =>
      jsm.streams.getMessage(stream, { last_by_subj: `${prefix}.toolplane.v1.events.execution.${k}` }).then(
        (m) => m?.seq ?? 0,
        () => 0,
      ),
    ),
  );
  const target = Math.max(0, ...lasts);
  await eventually(
    async () => feed.seq,
    (seq) => seq >= target,
    30_000,
    10,
  );
  const wanted = new Set(executionIds);
  return feed.events
    .filter((e) => wanted.has((e.payload as { execution_id?: string } | null)?.execution_id ?? ''))
    .map(({ kind, payload }) => ({ kind, payload }));
}

/** Polls the events stream until each execution has an event of one of `kinds`. */
export function eventsFor(
  client: RawClient,
  prefix: string,
  executionIds: readonly string[],
  kinds: readonly string[],
  timeoutMs = 60_000,
): Promise<Array<{ kind: string; payload: any }>> {
  return eventually(
    () => executionEvents(client, prefix, executionIds),
    (evs) => executionIds.every((id) => evs.some((e) => e.payload.execution_id === id && kinds.includes(e.kind))),
    timeoutMs,
    100,
  );
}

/**
 * tools.execute, asked again while the answer is ENVIRONMENT_BUILDING (retryable by contract: the
 * call did not run, the build goes on) until `timeoutMs`; any other answer is returned as it is.
 * A test that asserts a call's outcome uses this where its environment may still be building on a
 * slow box (the runner waits only so long, bounded by the caller's deadline).
 */
export async function executeOnceBuilt(
  client: RawClient,
  body: Record<string, unknown>,
  timeoutMs = 180_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await client.req('toolplane.v1.tools.execute', body, { timeoutMs: 180_000 });
    if (r.error?.code !== 'ENVIRONMENT_BUILDING' || r.status || Date.now() > deadline) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}
