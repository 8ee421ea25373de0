import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Kvm, type KV } from '@nats-io/kv';
import { MCP_SESSIONS_BUCKET, McpSessionClosed, type EventOf } from '@toolplane/contracts';
import { MessagingClient, streamName } from '@toolplane/messaging';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import { randomBytes } from 'node:crypto';
import type { GatewayConfig } from '../mcp-gateway.config';
import type { SessionRecord } from './session';

/** Records kept per replica (a hit saves a KV read per request). */
const LOCAL_MAX = 50_000;

/**
 * MCP sessions in NATS KV, so that any gateway replica serves any request of a session and none
 * holds state a restart could lose. A record is written once at initialize (before the client
 * gets its session id), read once per replica then kept in memory, and written again at most
 * every quarter of its TTL while the session is used (the bucket's TTL forgets idle sessions).
 * DELETE removes it and tells every replica to drop its copy.
 */
@Injectable()
export class SessionStore implements OnModuleInit {
  private readonly log = new Logger(SessionStore.name);
  private kv?: Promise<KV>;
  private readonly local = new Map<string, { record: SessionRecord; touched: number }>();

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.messaging.subscribeSealed(McpSessionClosed, (p: EventOf<typeof McpSessionClosed>) => this.local.delete(p.session_id));
    this.health.add('sessions', async () => {
      await (await this.bucket()).status();
    });
  }

  /** A new session id: 32 random bytes, URL-safe (visible ASCII, as the spec asks). */
  static newId(): string {
    return randomBytes(32).toString('base64url');
  }

  async create(id: string, record: SessionRecord): Promise<void> {
    await (await this.bucket()).put(id, JSON.stringify(record));
    this.remember(id, record, Date.now());
  }

  /** The session, or undefined when it never existed, expired or was deleted. */
  async get(id: string): Promise<SessionRecord | undefined> {
    const hit = this.local.get(id);
    const now = Date.now();
    if (hit) {
      if (now - hit.touched > this.config.GATEWAY_SESSION_TTL_MS / 4) {
        hit.touched = now;
        // Keeps it alive in the bucket; a failure here costs nothing but an earlier expiry.
        void this.bucket()
          .then((kv) => kv.put(id, JSON.stringify(hit.record)))
          .catch((e: Error) => this.log.warn(`could not refresh a session: ${e.message}`));
      }
      return hit.record;
    }
    const entry = await (await this.bucket()).get(id);
    if (!entry || entry.operation !== 'PUT' || entry.length === 0) return undefined;
    let record: SessionRecord;
    try {
      record = entry.json<SessionRecord>();
    } catch {
      return undefined;
    }
    if (record.v !== 1) return undefined;
    this.remember(id, record, entry.created.getTime());
    return record;
  }

  async delete(id: string): Promise<void> {
    this.local.delete(id);
    await (await this.bucket()).delete(id);
    this.messaging.notify(McpSessionClosed, { session_id: id });
  }

  private remember(id: string, record: SessionRecord, touched: number): void {
    if (this.local.size >= LOCAL_MAX) this.local.clear();
    this.local.set(id, { record, touched });
  }

  private bucket(): Promise<KV> {
    this.kv ??= new Kvm(this.messaging.nc)
      .create(streamName(this.messaging.prefix, MCP_SESSIONS_BUCKET), { ttl: this.config.GATEWAY_SESSION_TTL_MS, history: 1 })
      .catch((e: unknown) => {
        this.kv = undefined;
        throw e;
      });
    return this.kv;
  }
}
