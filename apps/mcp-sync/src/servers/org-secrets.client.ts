import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, OrgSecretsResolve } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { OrgSecretSource } from './templates';

/**
 * The org's secrets from the credentials service (org-wide: scope sandbox, no agent, no provider;
 * with an end user, the user's own first — the credentials service's precedence), asked once per
 * connect with a bounded timeout. Values stay in memory, never in a log line.
 */
@Injectable()
export class CredentialsSecretSource implements OrgSecretSource {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async lookup(orgId: string, names: string[], userId?: string): Promise<Record<string, string>> {
    const r = await this.messaging.request(OrgSecretsResolve, { org_id: orgId, names, ...(userId ? { user_id: userId } : {}) }, {
      timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS,
      down: { code: ErrorCode.CREDENTIALS_UNAVAILABLE, what: "The credentials service did not resolve the server's {{VAR}} templates" },
    });
    return r.values;
  }
}
