import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import {
  CredentialsChanged,
  ErrorCode,
  ExecutionEnvResolve,
  type Provider,
  type ReplyOf,
  type RequestIn,
  type Tool,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, OrgScopedCache } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';

export interface CallRef {
  org_id: string;
  agent_id?: string;
  /** The end user the call is made for: their secrets join the env, and the reply is reused for that user only. */
  user_id?: string;
  env?: Record<string, string>;
}

type EnvReply = ReplyOf<typeof ExecutionEnvResolve>;

/**
 * Asks the credentials service, once per call and within a bounded time, for the call's env.
 *
 * A reply the credentials service marks reusable (`cache_ttl_ms` > 0: the org has no webhook, so
 * the env depends only on stored secrets and configs) is reused for the identical request — same
 * org, agent, end user, tool, provider and per-call env — until the earliest of: its TTL, this executor's
 * CREDENTIALS_ENV_CACHE_TTL_MS, a CredentialsChanged broadcast for the org (sent by credentials on
 * every write of secrets, sandbox configs and webhooks, before it answers the write), or any
 * interruption of the NATS connection (a broadcast may have been missed). A reply whose request
 * overlapped a change of the org is used once and not kept. Values stay in memory only: never
 * logged, never on a span.
 */
@Injectable()
export class CredentialsClient implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(CredentialsClient.name);
  /** Forgotten per org on each change, and cleared on each connection interruption. */
  private readonly replies: OrgScopedCache<EnvReply>;
  private sub?: { unsubscribe(): void };
  private stopped = false;

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {
    this.replies = new OrgScopedCache(config.CREDENTIALS_ENV_CACHE_MAX_ENTRIES);
  }

  onModuleInit(): void {
    if (this.config.CREDENTIALS_ENV_CACHE_TTL_MS <= 0) return;
    this.sub = this.messaging.onEvents([CredentialsChanged], (_e, p) => this.replies.forget(p.org_id));
    void this.watchConnection();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    this.sub?.unsubscribe();
    this.replies.clear();
  }

  /** `provider` undefined: the org's default (credentials decides). */
  async resolveEnv(call: CallRef, tool: Tool, provider: Provider | undefined): Promise<EnvReply> {
    const req: RequestIn<typeof ExecutionEnvResolve> = {
      org_id: call.org_id,
      ...(call.agent_id ? { agent_id: call.agent_id } : {}),
      ...(call.user_id ? { user_id: call.user_id } : {}),
      tool_id: tool.id,
      tool_name: tool.name,
      project_id: tool.project_id,
      ...(provider ? { provider } : {}),
      ...(call.env ? { env: call.env } : {}),
    };
    if (this.config.CREDENTIALS_ENV_CACHE_TTL_MS <= 0) return this.ask(req);
    // The end user is part of the key: one user's env (their secrets) never answers another user's call, nor one without a user.
    const key = JSON.stringify([
      req.agent_id ?? null,
      req.user_id ?? null,
      req.tool_id,
      req.tool_name,
      req.project_id,
      provider ?? null,
      req.env ?? null,
    ]);
    const hit = this.replies.get(call.org_id, key);
    const span = trace.getActiveSpan();
    span?.setAttribute('toolplane.cache.hit', hit !== undefined);
    if (hit) return hit.value;
    const version = this.replies.versionOf(call.org_id);
    const reply = await this.ask(req);
    this.replies.set(
      call.org_id,
      key,
      reply,
      Math.min(reply.cache_ttl_ms ?? 0, this.config.CREDENTIALS_ENV_CACHE_TTL_MS),
      version,
    );
    return reply;
  }

  private ask(req: RequestIn<typeof ExecutionEnvResolve>): Promise<EnvReply> {
    // Without its credentials a call must not run: a silent empty env is the bug this prevents.
    return this.messaging.request(ExecutionEnvResolve, req, {
      timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS,
      down: { code: ErrorCode.CREDENTIALS_UNAVAILABLE, what: 'The credentials service did not resolve the env' },
    });
  }

  /** A disconnect may lose broadcasts: forget every reply, and keep nothing asked across it. */
  private async watchConnection(): Promise<void> {
    try {
      for await (const s of this.messaging.nc.status()) {
        if (this.stopped) return;
        if (
          s.type === 'disconnect' ||
          s.type === 'reconnect' ||
          s.type === 'staleConnection' ||
          s.type === 'slowConsumer'
        ) {
          this.replies.clear();
          this.log.warn(`NATS connection ${s.type}: dropped the cached env replies`);
        }
      }
    } catch {
      // the connection closed
    }
  }
}
