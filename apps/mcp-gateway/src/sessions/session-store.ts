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
 * How long a replica trusts its copy without reading the bucket again: a DELETE on another replica
 * is told at once by a broadcast, and a broadcast this replica missed (a reconnect) within this long.
 */
const LOCAL_TRUST_MS = 5000;

/**
 * MCP sessions in NATS KV, so that any gateway replica serves any request of a session and none
 * holds state a restart could lose. A record is written once at initialize (before the client
 * gets its session id), read by a replica then kept in memory (read again after LOCAL_TRUST_MS),
 * and written again at most every quarter of its TTL while the session is used (the bucket's TTL
 * forgets idle sessions). DELETE removes it and tells every replica to drop its copy.
 */
@Injectable()
export class SessionStore implements OnModuleInit {
  private readonly log = new Logger(SessionStore.name);
  private kv?: Promise<KV>;
  private readonly local = new Map<
    string,
    { record: SessionRecord; revision: number; touched: number; checked: number }
  >();

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.messaging.subscribeSealed(McpSessionClosed, (p: EventOf<typeof McpSessionClosed>) =>
      this.local.delete(p.session_id),
    );
    this.health.add('sessions', async () => {
      await (await this.bucket()).status();
    });
  }

  /** A new session id: 32 random bytes, URL-safe (visible ASCII, as the spec asks). */
  static newId(): string {
    return randomBytes(32).toString('base64url');
  }

  async create(id: string, record: SessionRecord): Promise<void> {
    const revision = await (await this.bucket()).put(id, JSON.stringify(record));
    this.remember(id, record, revision, Date.now());
  }

  /** The session, or undefined when it never existed, expired or was deleted. */
  async get(id: string): Promise<SessionRecord | undefined> {
    const hit = this.local.get(id);
    const now = Date.now();
    if (hit && now - hit.checked < LOCAL_TRUST_MS) {
      if (now - hit.touched > this.config.GATEWAY_SESSION_TTL_MS / 4) {
        hit.touched = now;
        // Keeps it alive in the bucket — only as it was read (an update at its revision): a session
        // deleted meanwhile on another replica is not brought back. A failure costs an earlier expiry.
        void this.bucket()
          .then(async (kv) => (hit.revision = await kv.update(id, JSON.stringify(hit.record), hit.revision)))
          .catch((e: Error) => this.log.debug(`a session was not refreshed: ${e.message}`));
      }
      return hit.record;
    }
    const entry = await (await this.bucket()).get(id);
    if (!entry || entry.operation !== 'PUT' || entry.length === 0) {
      this.local.delete(id);
      return undefined;
    }
    let record: SessionRecord;
    try {
      record = entry.json<SessionRecord>();
    } catch {
      return undefined;
    }
    if (record.v !== 1) return undefined;
    this.remember(id, record, entry.revision, entry.created.getTime());
    return record;
  }

  async delete(id: string): Promise<void> {
    this.local.delete(id);
    await (await this.bucket()).delete(id);
    this.messaging.notify(McpSessionClosed, { session_id: id });
  }

  private remember(id: string, record: SessionRecord, revision: number, touched: number): void {
    if (this.local.size >= LOCAL_MAX) this.local.clear();
    this.local.set(id, { record, revision, touched, checked: Date.now() });
  }

  private bucket(): Promise<KV> {
    this.kv ??= new Kvm(this.messaging.nc)
      .create(streamName(this.messaging.prefix, MCP_SESSIONS_BUCKET), {
        ttl: this.config.GATEWAY_SESSION_TTL_MS,
        history: 1,
        replicas: this.messaging.streamReplicas,
      })
      .catch((e: unknown) => {
        this.kv = undefined;
        throw e;
      });
    return this.kv;
  }
}
