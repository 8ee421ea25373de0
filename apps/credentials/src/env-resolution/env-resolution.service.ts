import { Injectable } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import type { ExecutionEnvResolve, ReplyOf, RequestOf } from '@toolplane/contracts';
import { SandboxConfigsService } from '../sandbox-configs/sandbox-configs.service';
import { SecretsService } from '../secrets/secrets.service';
import { WebhooksService } from '../webhooks/webhooks.service';
import { mergeEnv, plain } from './env-merge';

/** The env of one call, from the org's stores and its webhook, in the documented precedence. */
@Injectable()
export class EnvResolutionService {
  constructor(
    private readonly secrets: SecretsService,
    private readonly webhooks: WebhooksService,
    private readonly sandboxConfigs: SandboxConfigsService,
  ) {}

  async resolve(req: RequestOf<typeof ExecutionEnvResolve>): Promise<ReplyOf<typeof ExecutionEnvResolve>> {
    const ctx = { orgId: req.org_id, agentId: req.agent_id, toolId: req.tool_id, toolName: req.tool_name, projectId: req.project_id };
    const [sandbox, agent, webhook] = await Promise.all([
      this.secrets.sandboxValues(req.org_id, req.provider),
      req.agent_id ? this.secrets.agentValues(req.org_id, req.agent_id, req.provider) : new Map(),
      this.webhooks.credentialsFor(ctx),
    ]);
    const fingerprint = await this.sandboxConfigs.fingerprintFor(req.org_id, req.provider, sandbox.rows);
    const { env, maskedKeys } = mergeEnv({
      sandbox: sandbox.values,
      webhook: plain(webhook, true),
      agent,
      call: plain(req.env, false),
      reserved: plain({ TOOLPLANE_ORG_ID: req.org_id, TOOLPLANE_TOOL_ID: req.tool_id, ...(req.agent_id ? { TOOLPLANE_AGENT_ID: req.agent_id } : {}) }, false),
    });
    // Counts only: names and values stay off spans.
    trace.getActiveSpan()?.setAttributes({
      'toolplane.env.sandbox_vars': sandbox.values.size,
      'toolplane.env.agent_secrets': agent.size,
      'toolplane.env.webhook_vars': Object.keys(webhook).length,
      'toolplane.env.masked': maskedKeys.length,
    });
    return { env, masked_keys: maskedKeys, sandbox_config_fingerprint: fingerprint };
  }
}
