import { Inject, Injectable } from '@nestjs/common';
import {
  ErrorCode,
  McpOAuthTokensDelete,
  McpOAuthTokensFetch,
  McpOAuthTokensList,
  McpOAuthTokensStore,
  type OAuthTokenRecord,
  type OAuthTokenSet,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';

/**
 * Where MCP servers' OAuth tokens live: the credentials service (encrypted there, one record per
 * org, server, issuer and — for an `account: "user"` server's connected accounts — end user).
 */
@Injectable()
export class OAuthTokenStore {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async fetch(orgId: string, serverId: string, issuer: string, userId?: string): Promise<OAuthTokenSet | null> {
    return (
      await this.messaging.request(
        McpOAuthTokensFetch,
        { org_id: orgId, server_id: serverId, issuer, ...user(userId) },
        this.opts(),
      )
    ).tokens;
  }

  async store(orgId: string, serverId: string, issuer: string, tokens: OAuthTokenSet, userId?: string): Promise<void> {
    await this.messaging.request(
      McpOAuthTokensStore,
      { org_id: orgId, server_id: serverId, issuer, tokens, ...user(userId) },
      this.opts(),
    );
  }

  /** Every token of the server (all users'), or one end user's. */
  async forget(orgId: string, serverId: string, userId?: string): Promise<number> {
    return (
      await this.messaging.request(
        McpOAuthTokensDelete,
        { org_id: orgId, server_id: serverId, ...user(userId) },
        this.opts(),
      )
    ).deleted;
  }

  /** Which records exist (never their tokens). */
  async list(
    orgId: string,
    filter: { serverId?: string; userId?: string; usersOnly?: boolean },
  ): Promise<OAuthTokenRecord[]> {
    const req = {
      org_id: orgId,
      ...(filter.serverId ? { server_id: filter.serverId } : {}),
      ...user(filter.userId),
      ...(filter.usersOnly ? { users_only: true } : {}),
    };
    return (await this.messaging.request(McpOAuthTokensList, req, this.opts())).records;
  }

  private opts() {
    return {
      timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS,
      down: {
        code: ErrorCode.CREDENTIALS_UNAVAILABLE,
        what: 'The credentials service did not answer for the OAuth tokens',
      },
    };
  }
}

function user(userId: string | undefined): { user_id?: string } {
  return userId ? { user_id: userId } : {};
}
