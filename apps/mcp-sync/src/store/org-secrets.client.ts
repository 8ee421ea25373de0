import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, OrgSecretsResolve } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { OrgSecretSource, TemplateCaller } from './templates';

/**
 * The org's secrets from the credentials service (org-wide: scope sandbox, no agent, no provider;
 * with a caller, the end user's own first, then the agent's — the credentials service's precedence), asked once per
 * connect with a bounded timeout. Values stay in memory, never in a log line.
 */
@Injectable()
export class CredentialsSecretSource implements OrgSecretSource {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async lookup(orgId: string, names: string[], caller: TemplateCaller = {}): Promise<Record<string, string>> {
    const who = {
      ...(caller.agentId ? { agent_id: caller.agentId } : {}),
      ...(caller.userId ? { user_id: caller.userId } : {}),
    };
    const r = await this.messaging.request(
      OrgSecretsResolve,
      { org_id: orgId, names, ...who },
      {
        timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS,
        down: {
          code: ErrorCode.CREDENTIALS_UNAVAILABLE,
          what: "The credentials service did not resolve the server's {{VAR}} templates",
        },
      },
    );
    return r.values;
  }
}
