import { Injectable, Logger } from '@nestjs/common';
import {
  OAuthTokenSet,
  type McpOAuthTokensDelete,
  type McpOAuthTokensFetch,
  type McpOAuthTokensList,
  type McpOAuthTokensStore,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { aad, SecretBox } from '../crypto/secret-box';
import { OAuthTokensRepository, type OAuthTokenRef } from './oauth-tokens.repository';

/**
 * MCP servers' OAuth tokens: sealed with the same envelope as secrets, bound to (org, server,
 * issuer) and, for an end user's connected account, to the user. Never logged; `list` shows
 * which records exist (scope, times), never what they hold.
 */
@Injectable()
export class OAuthTokensService {
  private readonly log = new Logger(OAuthTokensService.name);

  constructor(
    private readonly tokens: OAuthTokensRepository,
    private readonly box: SecretBox,
  ) {}

  async store(req: RequestOf<typeof McpOAuthTokensStore>): Promise<ReplyOf<typeof McpOAuthTokensStore>> {
    const ref = refOf(req);
    const sealed = this.box.seal(JSON.stringify(req.tokens), aad.oauthToken(ref));
    const expiresAt = req.tokens.expires_at !== null ? new Date(req.tokens.expires_at) : null;
    await this.tokens.upsert(
      ref,
      { keyId: sealed.keyId, ciphertext: sealed.blob },
      { scope: req.tokens.scope, expiresAt },
    );
    this.log.log(
      `stored OAuth tokens of MCP server ${req.server_id} (issuer ${new URL(req.issuer).origin}) in org ${req.org_id}${req.user_id ? ' for an end user' : ''}`,
    );
    return { stored: true };
  }

  async fetch(req: RequestOf<typeof McpOAuthTokensFetch>): Promise<ReplyOf<typeof McpOAuthTokensFetch>> {
    const ref = refOf(req);
    const row = await this.tokens.find(ref);
    if (!row) return { tokens: null };
    const json = this.box.open(
      { keyId: row.keyId, blob: row.ciphertext },
      aad.oauthToken(ref),
      `OAuth tokens of MCP server ${req.server_id}`,
    );
    return { tokens: OAuthTokenSet.parse(JSON.parse(json)) };
  }

  async delete(req: RequestOf<typeof McpOAuthTokensDelete>): Promise<ReplyOf<typeof McpOAuthTokensDelete>> {
    const deleted = await this.tokens.deleteForServer(req.org_id, req.server_id, req.user_id);
    if (deleted)
      this.log.log(
        `deleted ${deleted} OAuth token record(s) of MCP server ${req.server_id} in org ${req.org_id}${req.user_id ? " (an end user's)" : ''}`,
      );
    return { deleted };
  }

  async list(req: RequestOf<typeof McpOAuthTokensList>): Promise<ReplyOf<typeof McpOAuthTokensList>> {
    const rows = await this.tokens.list(req.org_id, {
      ...(req.server_id !== undefined ? { serverId: req.server_id } : {}),
      ...(req.user_id !== undefined ? { userId: req.user_id } : {}),
      ...(req.users_only ? { usersOnly: true } : {}),
    });
    return {
      records: rows.map((r) => ({
        server_id: r.serverId,
        user_id: r.userId === '' ? null : r.userId,
        issuer: r.issuer,
        scope: r.scope,
        created_at: r.createdAt.toISOString(),
        updated_at: r.updatedAt.toISOString(),
        expires_at: r.expiresAt?.toISOString() ?? null,
      })),
    };
  }
}

function refOf(req: { org_id: string; server_id: string; issuer: string; user_id?: string }): OAuthTokenRef {
  return { orgId: req.org_id, serverId: req.server_id, userId: req.user_id ?? '', issuer: req.issuer };
}
