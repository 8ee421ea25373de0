import { Logger } from '@nestjs/common';
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { EventDescriptor, WorkQueueDescriptor } from '@toolplane/contracts';
import type { MessagingClient } from '@toolplane/messaging';
import type { DataSource, EntityManager } from 'typeorm';

/** What an outbox may carry: events (to the events stream) and work-queue messages. */
export type Publishable = EventDescriptor | WorkQueueDescriptor;

export interface PendingEvent {
  descriptor: Publishable;
  /** The JetStream message id (a retried publish inside the stream's duplicate window is stored once). */
  eventId: string;
  orgId: string;
  payload: Record<string, unknown>;
}

export interface OutboxOptions {
  /**
   * The app's outbox table, schema-qualified (`registry.event_outbox`): columns seq bigserial,
   * event_id uuid unique, org_id, prefix, subject, payload jsonb, trace jsonb, attempts, created_at
   * (the registry's CreateEventOutbox migration is the shape).
   */
  table: string;
  /** Per-org advisory lock key: `<lockPrefix>.<subject prefix>.<org>` (`registry.outbox`). */
  lockPrefix: string;
  /** Every descriptor that may be staged (anything else stays in the table, and is reported). */
  descriptors: readonly Publishable[];
  /** How often every replica looks for messages left behind (JetStream was down, a replica died). */
  relayEveryMs: number;
  /** A message this old is the relay's (younger ones are still being published by their writer). */
  relayAfterMs: number;
  /** What the outbox carries, for log lines ("tool events"). */
  what: string;
  /** Run after a failed publish, e.g. to create a stream an operator deleted. */
  repair?: () => Promise<unknown>;
}

interface OutboxRow {
  seq: string;
  event_id: string;
  subject: string;
  payload: Record<string, unknown>;
  trace: Record<string, string>;
}

/** Publishes in flight at once while draining (sent in order on one connection; acks awaited together). */
const PUBLISH_CONCURRENCY = 64;
const DRAIN_BATCH = 1000;
const TABLE = /^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/;

/**
 * Transactional outbox. A change and its messages are written in one transaction (`stage`), so a
 * message exists exactly when its change was committed: none for a change that rolled back, none
 * lost when the process dies between commit and publish. After the commit the writer drains its
 * org's pending messages to JetStream (`drain`, in commit order per org, under a per-org advisory
 * lock shared by every replica); whatever could not be published then (JetStream down, the process
 * killed) is published by the relay, which every replica runs (`start`). The message id is the
 * JetStream message id: a retried publish inside the stream's duplicate window is stored once.
 *
 * An app makes it a provider by subclassing it (`class EventOutbox extends TransactionalOutbox`,
 * passing its DataSource, MessagingClient and options): Nest calls the lifecycle hooks below.
 */
export class TransactionalOutbox {
  protected readonly log: Logger;
  private timer?: NodeJS.Timeout;
  private relaying?: Promise<void>;
  private warned = false;
  private readonly bySubject: ReadonlyMap<string, Publishable>;
  /** Per org: the drain running now, and the one callers wait for when they came during it. */
  private readonly drains = new Map<
    string,
    { running: Promise<number>; next?: { promise: Promise<number>; resolve: (n: number) => void } }
  >();

  constructor(
    protected readonly ds: DataSource,
    protected readonly messaging: MessagingClient,
    private readonly opts: OutboxOptions,
  ) {
    if (!TABLE.test(opts.table)) throw new Error(`outbox table must be schema.table in lowercase: ${opts.table}`);
    this.log = new Logger(new.target.name);
    this.bySubject = new Map(opts.descriptors.map((d) => [d.subject, d]));
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.relaying ??= this.relay().finally(() => (this.relaying = undefined));
    }, this.opts.relayEveryMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.relaying;
  }

  /** Writes messages inside the caller's transaction `m` (they commit or roll back with the change). */
  async stage(m: EntityManager, events: readonly PendingEvent[]): Promise<void> {
    if (!events.length) return;
    const trace: Record<string, string> = {};
    propagation.inject(context.active(), trace);
    const traceJson = JSON.stringify(trace);
    for (let i = 0; i < events.length; i += 500) {
      const chunk = events.slice(i, i + 500);
      const values: unknown[] = [];
      const rows = chunk.map((e, k) => {
        values.push(
          e.eventId,
          e.orgId,
          this.messaging.prefix,
          e.descriptor.subject,
          JSON.stringify(e.payload),
          traceJson,
        );
        const b = k * 6;
        return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}::jsonb, $${b + 6}::jsonb)`;
      });
      await m.query(
        `INSERT INTO ${this.opts.table} (event_id, org_id, prefix, subject, payload, trace) VALUES ${rows.join(', ')}`,
        values,
      );
    }
  }

  /**
   * Publishes the org's pending messages in commit order and deletes them. Never throws: what
   * could not be published stays for the relay. Returns how many were published.
   *
   * Calls for one org coalesce in this process: while a drain of the org runs, every new call
   * waits for one more drain after it (which publishes what they committed), instead of each
   * queueing its own transaction on the org's lock.
   */
  drain(orgId: string): Promise<number> {
    const state = this.drains.get(orgId);
    if (!state) return this.startDrain(orgId);
    if (!state.next) {
      let resolve!: (n: number) => void;
      state.next = { promise: new Promise<number>((r) => (resolve = r)), resolve };
    }
    return state.next.promise;
  }

  private startDrain(orgId: string): Promise<number> {
    const running = this.drainAll(orgId).finally(() => {
      const next = this.drains.get(orgId)?.next;
      this.drains.delete(orgId);
      if (next) void this.startDrain(orgId).then(next.resolve);
    });
    this.drains.set(orgId, { running });
    return running;
  }

  private async drainAll(orgId: string): Promise<number> {
    let total = 0;
    for (;;) {
      const { published, full } = await this.drainBatch(orgId);
      total += published;
      if (!full) return total;
    }
  }

  /** Drains every org with messages older than relayAfterMs (left by a failed or interrupted drain). */
  async relay(): Promise<void> {
    try {
      const orgs: Array<{ org_id: string }> = await this.ds.query(
        `SELECT DISTINCT org_id FROM ${this.opts.table} WHERE prefix = $1 AND created_at < now() - make_interval(secs => $2::double precision / 1000) LIMIT 100`,
        [this.messaging.prefix, this.opts.relayAfterMs],
      );
      for (const { org_id } of orgs) await this.drain(org_id);
    } catch (e) {
      this.warnOnce(`the ${this.opts.what} outbox relay failed: ${(e as Error).message}`);
    }
  }

  /** One batch of `drain`; `full`: the batch was full and all of it was published (there may be more). */
  private async drainBatch(orgId: string): Promise<{ published: number; full: boolean }> {
    try {
      return await this.ds.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
          `${this.opts.lockPrefix}.${this.messaging.prefix}.${orgId}`,
        ]);
        const rows: OutboxRow[] = await m.query(
          `SELECT seq, event_id, subject, payload, trace FROM ${this.opts.table} WHERE prefix = $1 AND org_id = $2 ORDER BY seq LIMIT ${DRAIN_BATCH}`,
          [this.messaging.prefix, orgId],
        );
        const published: string[] = [];
        let failure: unknown;
        for (let i = 0; i < rows.length && failure === undefined; i += PUBLISH_CONCURRENCY) {
          const batch = rows.slice(i, i + PUBLISH_CONCURRENCY);
          const results = await Promise.allSettled(batch.map((r) => this.publish(r)));
          results.forEach((res, k) =>
            res.status === 'fulfilled' ? published.push(batch[k]!.seq) : (failure ??= res.reason),
          );
        }
        if (published.length)
          await m.query(`DELETE FROM ${this.opts.table} WHERE seq = ANY($1::bigint[])`, [published]);
        if (failure !== undefined) {
          await m.query(`UPDATE ${this.opts.table} SET attempts = attempts + 1 WHERE prefix = $1 AND org_id = $2`, [
            this.messaging.prefix,
            orgId,
          ]);
          this.warnOnce(
            `${this.opts.what} of org ${orgId} wait in the outbox (${rows.length - published.length} unpublished): ${(failure as Error)?.message ?? failure}`,
          );
          await this.opts.repair?.().catch(() => undefined);
        } else if (this.warned) {
          this.warned = false;
          this.log.log(`${this.opts.what} are published again`);
        }
        return { published: published.length, full: rows.length === DRAIN_BATCH && published.length === rows.length };
      });
    } catch (e) {
      this.warnOnce(`draining the ${this.opts.what} outbox of org ${orgId} failed: ${(e as Error).message}`);
      return { published: 0, full: false };
    }
  }

  private publish(r: OutboxRow): Promise<void> {
    const d = this.bySubject.get(r.subject);
    if (!d) return Promise.reject(new Error(`no descriptor for ${r.subject}`));
    // The relay publishes in the trace of the change that staged the message.
    const parent = Object.keys(r.trace ?? {}).length ? propagation.extract(ROOT_CONTEXT, r.trace) : context.active();
    return context.with(parent, () => this.messaging.publish(d, r.payload as never, r.event_id));
  }

  private warnOnce(message: string): void {
    if (!this.warned) this.log.warn(message);
    this.warned = true;
  }
}
