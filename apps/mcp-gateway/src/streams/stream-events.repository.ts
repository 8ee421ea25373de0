import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { MCP_EVENTS_STREAM, MCP_EVENTS_SUBJECTS, McpStreamEvent } from '@toolplane/contracts';
import {
  decodeJson,
  encodeJson,
  ensureStream,
  MessagingClient,
  parseContract,
  streamName,
  withPrefix,
} from '@toolplane/messaging';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import type { GatewayConfig } from '../mcp-gateway.config';

/** A stored event with its JetStream sequence. */
export interface StoredStreamEvent {
  seq: number;
  /** When JetStream stored it (ms since the epoch, the NATS server's clock). */
  at: number;
  event: McpStreamEvent;
}

/**
 * The JetStream stream of SSE events (MCP_EVENTS_STREAM), and the only code that touches it. The
 * gateway creates it (limits by age and size: old events go first; nothing reads an event past
 * the age a resume could need). Appending is a core-NATS publish, not a JetStream publish waiting
 * for its ack: a request's hot path never waits on storage, and this connection keeps the order
 * of what one replica appends. The price: an event JetStream could not store (the stream
 * missing, NATS restarting) is lost silently — the client's live connection still got it; only a
 * resume through that event would miss it.
 */
@Injectable()
export class StreamEventsRepository implements OnModuleInit {
  private readonly log = new Logger(StreamEventsRepository.name);
  private created?: Promise<string>;
  private js?: JetStreamClient;
  private jsm?: JetStreamManager;

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    if (!this.config.GATEWAY_RESUMABLE_STREAMS) return;
    this.health.add('mcp-events', async () => {
      await this.stream();
    });
    void this.stream().catch((e: Error) => this.log.warn(`the SSE event stream is not there yet: ${e.message}`));
  }

  /** Stores an event without waiting (see the class doc). */
  append(subject: string, event: McpStreamEvent): void {
    this.messaging.nc.publish(withPrefix(this.messaging.prefix, subject), encodeJson(event));
  }

  /**
   * Stores an event only if nothing was stored on `subject` after sequence `lastSeq` (JetStream's
   * expected last subject sequence): false when something was (the stream is alive after all).
   */
  async appendIfLast(subject: string, event: McpStreamEvent, lastSeq: number): Promise<boolean> {
    await this.stream();
    this.js ??= jetstream(this.messaging.nc);
    try {
      await this.js.publish(withPrefix(this.messaging.prefix, subject), encodeJson(event), {
        expect: { lastSubjectSequence: lastSeq },
        timeout: 5000,
      });
      return true;
    } catch (e) {
      if (/wrong last sequence/i.test((e as Error).message)) return false;
      throw e;
    }
  }

  /** The sequence of the last event stored on `subject`, or undefined when there is none (never was, or expired). */
  async lastSeq(subject: string): Promise<number | undefined> {
    const name = await this.stream();
    this.jsm ??= await jetstreamManager(this.messaging.nc);
    try {
      const m = await this.jsm.streams.getMessage(name, { last_by_subj: withPrefix(this.messaging.prefix, subject) });
      return m?.seq;
    } catch (e) {
      if (/no message found|not found/i.test((e as Error).message)) return undefined;
      throw e;
    }
  }

  /**
   * The events stored on `subject`, then each new one as it is stored, in order (an ordered
   * consumer: no gap between what was stored and what comes), until `signal` aborts. An event that
   * does not match its schema is skipped.
   */
  async *follow(subject: string, signal: AbortSignal): AsyncGenerator<StoredStreamEvent> {
    const name = await this.stream();
    this.js ??= jetstream(this.messaging.nc);
    const consumer = await this.js.consumers.get(name, {
      filter_subjects: withPrefix(this.messaging.prefix, subject),
      deliver_policy: DeliverPolicy.All,
    });
    const messages = await consumer.consume({ max_messages: 256 });
    const stop = () => void messages.close().catch(() => undefined);
    signal.addEventListener('abort', stop, { once: true });
    try {
      if (signal.aborted) return;
      for await (const m of messages) {
        let event: McpStreamEvent;
        try {
          event = parseContract(McpStreamEvent, decodeJson(m.data), `Event ${MCP_EVENTS_SUBJECTS}`);
        } catch {
          continue;
        }
        yield { seq: m.seq, at: Math.floor(Number(m.info.timestampNanos) / 1e6), event };
      }
    } finally {
      signal.removeEventListener('abort', stop);
      stop();
    }
  }

  /** Creates the stream if missing (idempotent; replicas may race). */
  private stream(): Promise<string> {
    this.created ??= this.create().catch((e: unknown) => {
      this.created = undefined;
      throw e;
    });
    return this.created;
  }

  private create(): Promise<string> {
    return ensureStream(this.messaging.nc, {
      name: streamName(this.messaging.prefix, MCP_EVENTS_STREAM),
      subjects: [withPrefix(this.messaging.prefix, MCP_EVENTS_SUBJECTS)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: this.messaging.streamReplicas,
      discard: DiscardPolicy.Old,
      max_age: this.config.GATEWAY_STREAM_RETENTION_MS * 1e6,
      max_bytes: this.config.GATEWAY_STREAM_MAX_BYTES,
      max_msg_size: 1024 * 1024,
      duplicate_window: 30 * 1e9,
    });
  }
}
