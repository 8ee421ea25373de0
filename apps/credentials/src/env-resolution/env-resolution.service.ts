import { Injectable } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import {
  PROVIDER_CREDENTIAL_KEYS,
  type ExecutionEnvResolve,
  type Provider,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { CredentialsCache } from '../cache/credentials-cache';
import { SandboxConfigsService } from '../sandbox-configs/sandbox-configs.service';
import { SecretsService } from '../secrets/secrets.service';
import { WebhooksService } from '../webhooks/webhooks.service';
import { mergeEnv, plain } from './env-merge';

/**
 * The env of one call, from the org's stores and its webhook, in the one precedence of ENV_LAYERS
 * (env-merge.ts): sandbox env < webhook < agent secrets < the end user's secrets < per-call env <
 * reserved ids. A call without user_id reads no user's secrets; every cached piece is keyed by the
 * owner it belongs to (agent, user), so one user's values never answer another user's call.
 */
@Injectable()
export class EnvResolutionService {
  constructor(
    private readonly secrets: SecretsService,
    private readonly webhooks: WebhooksService,
    private readonly sandboxConfigs: SandboxConfigsService,
    private readonly cache: CredentialsCache,
  ) {}

  async resolve(req: RequestOf<typeof ExecutionEnvResolve>): Promise<ReplyOf<typeof ExecutionEnvResolve>> {
    // The provider that runs the call: the one asked for (the tool's metadata_.sandbox, or a
    // fallback), else the org's default.
    const provider: Provider = req.provider ?? (await this.sandboxConfigs.defaultProvider(req.org_id));
    const ctx = {
      orgId: req.org_id,
      agentId: req.agent_id,
      userId: req.user_id,
      toolId: req.tool_id,
      toolName: req.tool_name,
      projectId: req.project_id,
    };
    // The org's stored state is cached (evicted on every write of it); the webhook is still asked per call.
    const [{ sandbox, fingerprint, settings }, agent, user, webhook, hasWebhook] = await Promise.all([
      this.cache.get(req.org_id, `sandbox\u0000${provider}`, async () => {
        const sandbox = await this.secrets.sandboxValues(req.org_id, provider);
        return { sandbox, ...(await this.sandboxConfigs.resolvedFor(req.org_id, provider, sandbox.rows)) };
      }),
      req.agent_id
        ? this.cache.get(req.org_id, `agent\u0000${req.agent_id}\u0000${provider}`, () =>
            this.secrets.agentValues(req.org_id, req.agent_id!, provider),
          )
        : new Map(),
      req.user_id
        ? this.cache.get(req.org_id, `user\u0000${req.user_id}\u0000${provider}`, () =>
            this.secrets.userValues(req.org_id, req.user_id!, provider),
          )
        : new Map(),
      this.webhooks.credentialsFor(ctx),
      this.webhooks.configured(req.org_id),
    ]);
    // The provider's own credentials leave the tool's env: only the runner gets them.
    const sandboxVars = new Map(sandbox.values);
    const credentials: Record<string, string> = {};
    for (const key of PROVIDER_CREDENTIAL_KEYS[provider]) {
      const v = sandboxVars.get(key);
      if (v === undefined) continue;
      credentials[key] = v.value;
      sandboxVars.delete(key);
    }
    const { env, maskedKeys } = mergeEnv({
      sandbox: sandboxVars,
      webhook: plain(webhook, true),
      agent,
      user,
      call: plain(req.env, false),
      reserved: plain(
        {
          TOOLPLANE_ORG_ID: req.org_id,
          TOOLPLANE_TOOL_ID: req.tool_id,
          ...(req.agent_id ? { TOOLPLANE_AGENT_ID: req.agent_id } : {}),
        },
        false,
      ),
    });
    // Counts only: names and values stay off spans.
    trace.getActiveSpan()?.setAttributes({
      'toolplane.env.sandbox_vars': sandbox.values.size,
      'toolplane.env.agent_secrets': agent.size,
      'toolplane.env.user_secrets': user.size,
      'toolplane.env.webhook_vars': Object.keys(webhook).length,
      'toolplane.env.masked': maskedKeys.length,
    });
    // Without a webhook the reply depends only on stored state, whose every write broadcasts
    // CredentialsChanged: the executor may reuse it as long as this replica caches that state.
    const cacheTtlMs = hasWebhook ? 0 : this.cache.ttl;
    return {
      provider,
      fallback_providers: (settings?.fallback_providers ?? []).filter((p) => p !== provider),
      env,
      masked_keys: maskedKeys,
      ...(Object.keys(credentials).length ? { provider_credentials: credentials } : {}),
      sandbox_config_fingerprint: fingerprint,
      sandbox_config: settings,
      cache_ttl_ms: cacheTtlMs,
    };
  }
}
