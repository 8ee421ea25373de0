import { Logger } from '@nestjs/common';
import { McpServerProgressed, type EventOf } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import type { LastSync } from '../store/mcp-server.entity';

type Payload = EventOf<typeof McpServerProgressed>;
type State = Pick<Payload, 'phase' | 'pages' | 'listed' | 'errors' | 'invalid' | 'write'>;

/**
 * The live progress of one sync run as mcp-server.progressed events (one per page listed, one when
 * the write starts, one per staged page written). Best effort: published in order on the events
 * stream without holding the sync up, and a failed publish never fails the sync; `flush()` before
 * the run's mcp-server.synced so that event comes last.
 */
export class SyncProgress {
  private readonly log = new Logger(SyncProgress.name);
  private readonly syncId = randomUUID();
  private chain: Promise<void> = Promise.resolve();
  private state: State = { phase: 'listing', pages: 0, listed: 0, errors: 0, invalid: null, write: null };

  constructor(
    private readonly messaging: MessagingClient,
    private readonly server: { id: string; orgId: string; name: string },
    private readonly trigger: LastSync['trigger'],
  ) {}

  /** A page of tools/list was read (counts so far). */
  listed(d: { pages: number; listed: number; errors: unknown[] }): void {
    this.emit({ phase: 'listing', pages: d.pages, listed: d.listed, errors: d.errors.length });
  }

  /** The listing ended; the tool set goes to the registry in `pages` messages. */
  writing(d: { pages: number; listed: number; errors: number }, invalid: number, tools: number, pages: number): void {
    this.emit({
      phase: 'writing',
      pages: d.pages,
      listed: d.listed,
      errors: d.errors,
      invalid,
      write: { tools, pages_done: 0, pages },
    });
  }

  /** One more message of the write was accepted. */
  wrote(): void {
    const w = this.state.write;
    if (w) this.emit({ write: { ...w, pages_done: w.pages_done + 1 } });
  }

  /** Resolves once every progress event so far was published (or given up). */
  flush(): Promise<void> {
    return this.chain;
  }

  private emit(change: Partial<State>): void {
    this.state = { ...this.state, ...change };
    const eventId = randomUUID();
    const payload: Payload = {
      event_id: eventId,
      occurred_at: new Date().toISOString(),
      org_id: this.server.orgId,
      server_id: this.server.id,
      server_name: this.server.name,
      sync_id: this.syncId,
      trigger: this.trigger,
      ...this.state,
    };
    this.chain = this.chain
      .then(() => this.messaging.publish(McpServerProgressed, payload, eventId))
      .catch((e: Error) => this.log.debug(`progress of the sync of ${this.server.name} not published: ${e.message}`));
  }
}
