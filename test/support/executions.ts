import { jetstreamManager } from '@nats-io/jetstream';
import type { RawClient } from './nats-client';

/** Polls `read` until `done` holds for its value (never a fixed sleep); throws with the last value after `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 60_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, everyMs));
    last = await read();
  }
  return last;
}

/**
 * executions.get, polled until the record exists and `done` holds for it. A request lost on the
 * way (sent to an executor a test just killed) is asked again.
 */
export function recordOf(client: RawClient, org: string, executionId: string, done: (r: any) => boolean = () => true, timeoutMs = 60_000): Promise<any> {
  return eventually(
    () => client.req('toolplane.v1.executions.get', { org_id: org, execution_id: executionId }, { timeoutMs: 5000 }).catch((e: Error) => ({ error: { code: e.name } })),
    (r) => !r.error && done(r),
    timeoutMs,
  );
}

/** The execution events of the run's stream for these executions (subject tail and payload), in stream order. */
export async function executionEvents(client: RawClient, prefix: string, executionIds: readonly string[]): Promise<Array<{ kind: string; payload: any }>> {
  const jsm = await jetstreamManager(client.nc);
  const stream = `${prefix}_TOOLPLANE_EVENTS`;
  const subject = `${prefix}.toolplane.v1.events.execution.*`;
  const wanted = new Set(executionIds);
  const out: Array<{ kind: string; payload: any }> = [];
  // Only the execution events: each read jumps to the next message on their subjects.
  for (let seq = 1; ; ) {
    const m = await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as { seq: number }).catch(() => null);
    if (!m) return out;
    const p = m.json<{ execution_id: string }>();
    if (wanted.has(p.execution_id)) out.push({ kind: m.subject.split('.').pop()!, payload: p });
    seq = m.seq + 1;
  }
}

/** Polls the events stream until each execution has an event of one of `kinds`. */
export function eventsFor(client: RawClient, prefix: string, executionIds: readonly string[], kinds: readonly string[], timeoutMs = 60_000): Promise<Array<{ kind: string; payload: any }>> {
  return eventually(
    () => executionEvents(client, prefix, executionIds),
    (evs) => executionIds.every((id) => evs.some((e) => e.payload.execution_id === id && kinds.includes(e.kind))),
    timeoutMs,
    100,
  );
}
