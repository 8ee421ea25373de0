import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ErrorCode,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type Webhook,
  type WebhooksDelete,
  type WebhooksGet,
  type WebhooksSet,
} from '@toolplane/contracts';
import { APP_CONFIG, OrgScopedCache, UrlGuard } from '@toolplane/platform';
import { CredentialsCache } from '../cache/credentials-cache';
import type { CredentialsConfig } from '../credentials.config';
import { aad, SecretBox } from '../crypto/secret-box';
import { WebhookClient, WebhookFailure } from './webhook.client';
import type { WebhookEntity } from './webhook.entity';
import { WebhooksRepository } from './webhooks.repository';

export interface WebhookCallContext {
  orgId: string;
  agentId?: string;
  /** The end user the call is made for: sent to the webhook, and part of its cache key. */
  userId?: string;
  toolId: string;
  toolName: string | null;
  projectId: string | null;
}

const tracer = trace.getTracer('credentials');

@Injectable()
export class WebhooksService {
  private readonly log = new Logger(WebhooksService.name);
  private readonly guard: UrlGuard;
  private readonly client: WebhookClient;
  /** Successful webhook replies by org, agent, end user and tool, for the webhook's cache_ttl_ms; failures are never kept. */
  private readonly cache: OrgScopedCache<Record<string, string>>;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly box: SecretBox,
    @Inject(APP_CONFIG) config: CredentialsConfig,
    private readonly stored: CredentialsCache,
  ) {
    this.guard = new UrlGuard({
      profile: config.TOOLPLANE_PROFILE,
      allowed: config.CREDENTIALS_WEBHOOK_ALLOWED_CIDRS,
      allowHttp: config.CREDENTIALS_WEBHOOK_ALLOW_HTTP,
      allowUserinfo: false,
      allowlistSetting: 'CREDENTIALS_WEBHOOK_ALLOWED_CIDRS',
      httpSetting: 'CREDENTIALS_WEBHOOK_ALLOW_HTTP',
      codes: { refused: ErrorCode.WEBHOOK_URL_REFUSED, unresolved: ErrorCode.WEBHOOK_URL_REFUSED },
    });
    this.client = new WebhookClient(this.guard, config.CREDENTIALS_WEBHOOK_MAX_REPLY_BYTES);
    this.cache = new OrgScopedCache(config.CREDENTIALS_WEBHOOK_CACHE_MAX_ENTRIES);
  }

  async set(req: RequestOf<typeof WebhooksSet>): Promise<ReplyOf<typeof WebhooksSet>> {
    const url = new URL(req.url);
    try {
      await this.guard.check(url);
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.WEBHOOK_URL_REFUSED)
        throw new ToolplaneError(
          ErrorCode.WEBHOOK_URL_REFUSED,
          `Webhook URL refused: ${e.message}`,
          { host: url.hostname },
          { cause: e },
        );
      throw e;
    }
    const sealed = this.box.seal(req.signing_secret, aad.webhook(req.org_id));
    const row = await this.webhooks.upsert({
      orgId: req.org_id,
      url: url.toString(),
      timeoutMs: req.timeout_ms,
      failMode: req.fail_mode,
      cacheTtlMs: req.cache_ttl_ms,
      keyId: sealed.keyId,
      signingSecret: sealed.blob,
    });
    this.cache.forget(req.org_id);
    this.stored.invalidate(req.org_id);
    this.log.log(`set the credentials webhook of org ${req.org_id} (host ${url.hostname}, fail_mode ${req.fail_mode})`);
    return { webhook: toWire(row) };
  }

  async get(req: RequestOf<typeof WebhooksGet>): Promise<ReplyOf<typeof WebhooksGet>> {
    const row = await this.webhooks.find(req.org_id);
    if (!row) throw notFound();
    return { webhook: toWire(row) };
  }

  async delete(req: RequestOf<typeof WebhooksDelete>): Promise<ReplyOf<typeof WebhooksDelete>> {
    if (!(await this.webhooks.delete(req.org_id))) throw notFound();
    this.cache.forget(req.org_id);
    this.stored.invalidate(req.org_id);
    this.log.log(`deleted the credentials webhook of org ${req.org_id}`);
    return { deleted: true };
  }

  /** Whether the org has a credentials webhook (asked per call: env replies are then never reused). */
  async configured(orgId: string): Promise<boolean> {
    return (await this.stored.get(orgId, 'webhook', () => this.webhooks.find(orgId))) !== null;
  }

  /**
   * The webhook's env for one call ({} when the org has none). On failure: fail_mode open →
   * {} with a warning and a span event; closed → CREDENTIALS_UNAVAILABLE.
   */
  async credentialsFor(ctx: WebhookCallContext): Promise<Record<string, string>> {
    const row = await this.stored.get(ctx.orgId, 'webhook', () => this.webhooks.find(ctx.orgId));
    if (!row) return {};
    // The user is part of the key: an answer given for one end user (or for none) never answers another's call.
    const cacheKey = JSON.stringify([ctx.agentId ?? null, ctx.userId ?? null, ctx.toolId]);
    const cached = this.cache.get(ctx.orgId, cacheKey);
    return tracer.startActiveSpan(
      'call credentials webhook',
      { attributes: { 'toolplane.webhook.fail_mode': row.failMode, 'toolplane.cache.hit': !!cached } },
      async (span) => {
        try {
          if (cached) return cached.value;
          const fetchEnv = () => {
            const signingSecret = this.box.open(
              { keyId: row.keyId, blob: row.signingSecret },
              aad.webhook(row.orgId),
              'the webhook signing secret',
            );
            return this.client.fetchEnv({
              url: row.url,
              signingSecret,
              timeoutMs: row.timeoutMs,
              body: {
                organization_id: ctx.orgId,
                agent_id: ctx.agentId ?? null,
                user_id: ctx.userId ?? null,
                tool_id: ctx.toolId,
                tool_name: ctx.toolName,
                project_id: ctx.projectId,
              },
            });
          };
          // Without caching every call asks the webhook (it may hand out per-call credentials); with
          // it, concurrent calls of one (agent, user, tool) share one request, as they would share its reply.
          const env =
            row.cacheTtlMs > 0
              ? (await this.cache.load(ctx.orgId, cacheKey, fetchEnv, { ttlMs: row.cacheTtlMs })).value
              : await fetchEnv();
          span.setAttribute('toolplane.webhook.env_count', Object.keys(env).length);
          return env;
        } catch (e) {
          if (!(e instanceof WebhookFailure)) throw e;
          span.addEvent('credentials.webhook.failed', {
            'toolplane.webhook.failure': e.reason,
            'toolplane.webhook.fail_mode': row.failMode,
          });
          if (row.failMode === 'open') {
            this.log.warn(
              `credentials webhook of org ${ctx.orgId} failed (${e.message}); fail_mode open: continuing without its credentials`,
            );
            return {};
          }
          span.setStatus({ code: SpanStatusCode.ERROR, message: ErrorCode.CREDENTIALS_UNAVAILABLE });
          this.log.warn(
            `credentials webhook of org ${ctx.orgId} failed (${e.message}); fail_mode closed: the execution fails`,
          );
          throw new ToolplaneError(ErrorCode.CREDENTIALS_UNAVAILABLE, `The credentials webhook failed: ${e.message}`, {
            reason: e.reason,
          });
        } finally {
          span.end();
        }
      },
    );
  }
}

function toWire(r: WebhookEntity): Webhook {
  return { url: r.url, timeout_ms: r.timeoutMs, fail_mode: r.failMode, cache_ttl_ms: r.cacheTtlMs };
}

function notFound(): ToolplaneError {
  return new ToolplaneError(ErrorCode.WEBHOOK_NOT_FOUND, 'This org has no credentials webhook');
}
