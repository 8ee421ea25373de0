import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  Optional,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { CredentialsChanged } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { CredentialsConfig } from '../credentials.config';

/**
 * What the per-call env resolution reads from Postgres (an org's secrets, sandbox config,
 * webhook row), cached per org on this replica. Every write of the org's secrets, sandbox configs
 * or webhook calls `invalidate(org)`, which drops the org's entries and bumps its version: a load
 * that began before the write is then not stored. Entries never cross orgs (one map per org) and
 * live at most CREDENTIALS_ENV_CACHE_TTL_MS (0 disables).
 *
 * `invalidate(org)` also broadcasts CredentialsChanged (core NATS, every replica): other
 * credentials replicas drop the org here too, and executors drop the env replies they reuse. The
 * broadcast leaves on the connection the write's reply leaves on, before it.
 */
@Injectable()
export class CredentialsCache implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(CredentialsCache.name);
  private readonly entries: OrgScopedCache<unknown>;
  private readonly ttlMs: number;
  private sub?: { unsubscribe(): void };

  constructor(
    @Inject(APP_CONFIG) config: Pick<
      CredentialsConfig,
      'CREDENTIALS_ENV_CACHE_TTL_MS' | 'CREDENTIALS_ENV_CACHE_MAX_ENTRIES'
    >,
    @Optional() private readonly messaging?: MessagingClient,
  ) {
    this.ttlMs = config.CREDENTIALS_ENV_CACHE_TTL_MS ?? 0;
    this.entries = new OrgScopedCache(config.CREDENTIALS_ENV_CACHE_MAX_ENTRIES ?? 10_000);
  }

  /** How long an entry lives (0: no caching). */
  get ttl(): number {
    return this.ttlMs;
  }

  onModuleInit(): void {
    // Writes on other replicas (ours come back too: dropping twice is harmless).
    this.sub = this.messaging?.onEvents([CredentialsChanged], (_e, p) => this.entries.forget(p.org_id));
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** The cached value of (org, key), or the loaded one: one load for concurrent callers, not kept if the org changed meanwhile. */
  async get<T>(orgId: string, key: string, load: () => Promise<T>): Promise<T> {
    if (this.ttlMs <= 0) return load();
    return (await this.entries.load(orgId, key, load, { ttlMs: this.ttlMs })).value as T;
  }

  /** The org's secrets, sandbox configs or webhook changed: forget everything cached for it, everywhere. */
  invalidate(orgId: string): void {
    this.entries.forget(orgId);
    try {
      this.messaging?.broadcast(CredentialsChanged, { org_id: orgId });
    } catch (e) {
      // The connection is closing: replicas and executors still expire what they hold by TTL.
      this.log.warn(`could not broadcast the change of org ${orgId}'s credentials: ${(e as Error).message}`);
    }
  }
}

@Global()
@Module({ providers: [CredentialsCache], exports: [CredentialsCache] })
export class CredentialsCacheModule {}
