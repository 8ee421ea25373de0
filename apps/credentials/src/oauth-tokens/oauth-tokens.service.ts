import { Injectable, Logger } from '@nestjs/common';
import { OAuthTokenSet, type McpOAuthTokensDelete, type McpOAuthTokensFetch, type McpOAuthTokensStore, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { aad, SecretBox } from '../crypto/secret-box';
import { OAuthTokensRepository, type OAuthTokenRef } from './oauth-tokens.repository';

/** MCP servers' OAuth tokens: sealed with the same envelope as secrets, bound to (org, server, issuer). Never logged. */
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
    await this.tokens.upsert(ref, { keyId: sealed.keyId, ciphertext: sealed.blob });
    this.log.log(`stored OAuth tokens of MCP server ${req.server_id} (issuer ${new URL(req.issuer).origin}) in org ${req.org_id}`);
    return { stored: true };
  }

  async fetch(req: RequestOf<typeof McpOAuthTokensFetch>): Promise<ReplyOf<typeof McpOAuthTokensFetch>> {
    const ref = refOf(req);
    const row = await this.tokens.find(ref);
    if (!row) return { tokens: null };
    const json = this.box.open({ keyId: row.keyId, blob: row.ciphertext }, aad.oauthToken(ref), `OAuth tokens of MCP server ${req.server_id}`);
    return { tokens: OAuthTokenSet.parse(JSON.parse(json)) };
  }

  async delete(req: RequestOf<typeof McpOAuthTokensDelete>): Promise<ReplyOf<typeof McpOAuthTokensDelete>> {
    const deleted = await this.tokens.deleteForServer(req.org_id, req.server_id);
    if (deleted) this.log.log(`deleted ${deleted} OAuth token record(s) of MCP server ${req.server_id} in org ${req.org_id}`);
    return { deleted };
  }
}

function refOf(req: { org_id: string; server_id: string; issuer: string }): OAuthTokenRef {
  return { orgId: req.org_id, serverId: req.server_id, issuer: req.issuer };
}
