import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import { ToolCreated, ToolDeleted, ToolUpdated, type EventDescriptor } from '@toolplane/contracts';
import { ensureEventsStream, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { DataSource, EntityManager } from 'typeorm';
import type { RegistryConfig } from '../registry.config';

const DESCRIPTORS = new Map<string, EventDescriptor>([ToolCreated, ToolUpdated, ToolDeleted].map((d) => [d.subject, d]));
/** Publishes in flight at once while draining (sent in order on one connection; acks awaited together). */
const PUBLISH_CONCURRENCY = 64;
const DRAIN_BATCH = 1000;

export interface PendingEvent {
  descriptor: EventDescriptor;
  eventId: string;
  orgId: string;
  payload: Record<string, unknown>;
}

interface OutboxRow {
  seq: string;
  event_id: string;
  subject: string;
  payload: Record<string, unknown>;
  trace: Record<string, string>;
}

/**
 * Transactional outbox of the registry's events. A change and its events are written in one
 * transaction (`stage`), so an event exists exactly when its change was committed: no event for a
 * change that rolled back, none lost when the registry dies between commit and publish. After the
 * commit the writer drains its org's pending events to JetStream (`drain`, in commit order per
 * org, under a per-org advisory lock shared by every replica) before replying; whatever could not
 * be published then (JetStream down, the process killed) is published by the relay, which every
 * replica runs. The event id is the JetStream message id: a retried publish inside the stream's
 * duplicate window (2 min) is stored once.
 */
@Injectable()
export class EventOutbox implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(EventOutbox.name);
  private timer?: NodeJS.Timeout;
  private relaying?: Promise<void>;
  private warned = false;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: RegistryConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.relaying ??= this.relay().finally(() => (this.relaying = undefined));
    }, this.config.REGISTRY_OUTBOX_RELAY_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.relaying;
  }

  /** Writes events inside the caller's transaction `m` (they commit or roll back with the change). */
  async stage(m: EntityManager, events: PendingEvent[]): Promise<void> {
    if (!events.length) return;
    const trace: Record<string, string> = {};
    propagation.inject(context.active(), trace);
    for (let i = 0; i < events.length; i += 500) {
      const chunk = events.slice(i, i + 500);
      const values: unknown[] = [];
      const rows = chunk.map((e, k) => {
        values.push(e.eventId, e.orgId, this.messaging.prefix, e.descriptor.subject, JSON.stringify(e.payload), JSON.stringify(trace));
        const b = k * 6;
        return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}::jsonb, $${b + 6}::jsonb)`;
      });
      await m.query(`INSERT INTO registry.event_outbox (event_id, org_id, prefix, subject, payload, trace) VALUES ${rows.join(', ')}`, values);
    }
  }

  /**
   * Publishes the org's pending events in commit order and deletes them. Never throws: what could
   * not be published stays for the relay. Returns how many were published.
   */
  async drain(orgId: string): Promise<number> {
    let total = 0;
    for (;;) {
      const { published, full } = await this.drainBatch(orgId);
      total += published;
      if (!full) return total;
    }
  }

  /** One batch of `drain`; `full`: the batch was full and all of it was published (there may be more). */
  private async drainBatch(orgId: string): Promise<{ published: number; full: boolean }> {
    try {
      return await this.ds.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`registry.outbox.${this.messaging.prefix}.${orgId}`]);
        const rows: OutboxRow[] = await m.query(
          `SELECT seq, event_id, subject, payload, trace FROM registry.event_outbox WHERE prefix = $1 AND org_id = $2 ORDER BY seq LIMIT ${DRAIN_BATCH}`,
          [this.messaging.prefix, orgId],
        );
        const published: string[] = [];
        let failure: unknown;
        for (let i = 0; i < rows.length && failure === undefined; i += PUBLISH_CONCURRENCY) {
          const batch = rows.slice(i, i + PUBLISH_CONCURRENCY);
          const results = await Promise.allSettled(batch.map((r) => this.publish(r)));
          results.forEach((res, k) => (res.status === 'fulfilled' ? published.push(batch[k]!.seq) : (failure ??= res.reason)));
        }
        if (published.length) await m.query('DELETE FROM registry.event_outbox WHERE seq = ANY($1::bigint[])', [published]);
        if (failure !== undefined) {
          await m.query('UPDATE registry.event_outbox SET attempts = attempts + 1 WHERE prefix = $1 AND org_id = $2', [this.messaging.prefix, orgId]);
          this.warnOnce(`tool events of org ${orgId} wait in the outbox (${rows.length - published.length} unpublished): ${(failure as Error)?.message ?? failure}`);
          await this.repairStream();
        } else if (this.warned) {
          this.warned = false;
          this.log.log('tool events are published again');
        }
        return { published: published.length, full: rows.length === DRAIN_BATCH && published.length === rows.length };
      });
    } catch (e) {
      this.warnOnce(`draining the event outbox of org ${orgId} failed: ${(e as Error).message}`);
      return { published: 0, full: false };
    }
  }

  /** Drains every org with events older than REGISTRY_OUTBOX_RELAY_AFTER_MS (left by a failed or interrupted drain). */
  async relay(): Promise<void> {
    try {
      const orgs: Array<{ org_id: string }> = await this.ds.query(
        `SELECT DISTINCT org_id FROM registry.event_outbox WHERE prefix = $1 AND created_at < now() - make_interval(secs => $2::double precision / 1000) LIMIT 100`,
        [this.messaging.prefix, this.config.REGISTRY_OUTBOX_RELAY_AFTER_MS],
      );
      for (const { org_id } of orgs) await this.drain(org_id);
    } catch (e) {
      this.warnOnce(`the event outbox relay failed: ${(e as Error).message}`);
    }
  }

  private publish(r: OutboxRow): Promise<void> {
    const d = DESCRIPTORS.get(r.subject);
    if (!d) return Promise.reject(new Error(`no event descriptor for ${r.subject}`));
    // The relay publishes in the trace of the change that staged the event.
    const parent = Object.keys(r.trace ?? {}).length ? propagation.extract(ROOT_CONTEXT, r.trace) : context.active();
    return context.with(parent, () => this.messaging.publish(d, r.payload as never, r.event_id));
  }

  /**
   * After a failed publish: the events stream is created if it is missing (e.g. deleted by an
   * operator; JetStream then answers "no responders", which the client reports as "jetstream is
   * not enabled") so the outbox can drain on the next attempt.
   */
  private async repairStream(): Promise<void> {
    await ensureEventsStream(this.messaging.nc, this.messaging.prefix).catch(() => undefined);
  }

  private warnOnce(message: string): void {
    if (!this.warned) this.log.warn(message);
    this.warned = true;
  }
}
