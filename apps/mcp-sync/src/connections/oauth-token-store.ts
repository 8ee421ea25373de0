import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, McpOAuthTokensDelete, McpOAuthTokensFetch, McpOAuthTokensStore, type OAuthTokenSet } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';

/** Where MCP servers' OAuth tokens live: the credentials service (encrypted there, one record per org, server and issuer). */
@Injectable()
export class OAuthTokenStore {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async fetch(orgId: string, serverId: string, issuer: string): Promise<OAuthTokenSet | null> {
    return (await this.messaging.request(McpOAuthTokensFetch, { org_id: orgId, server_id: serverId, issuer }, this.opts())).tokens;
  }

  async store(orgId: string, serverId: string, issuer: string, tokens: OAuthTokenSet): Promise<void> {
    await this.messaging.request(McpOAuthTokensStore, { org_id: orgId, server_id: serverId, issuer, tokens }, this.opts());
  }

  async forget(orgId: string, serverId: string): Promise<void> {
    await this.messaging.request(McpOAuthTokensDelete, { org_id: orgId, server_id: serverId }, this.opts());
  }

  private opts() {
    return { timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS, down: { code: ErrorCode.CREDENTIALS_UNAVAILABLE, what: 'The credentials service did not answer for the OAuth tokens' } };
  }
}
