import { Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpOAuthComplete, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { AccountQueries } from '../accounts/account-queries';
import { ConnectionEvents } from '../connections/connection-events';
import { ConnectionPool } from '../connections/connection-pool';
import type { OAuthState } from '../connections/oauth-provider';
import { OAuthTokenStore } from '../connections/oauth-token-store';
import { SyncService } from '../sync/sync.service';
import { AddServer } from './add-server';
import { AuthorizationCodeFlow } from './authorization-code-flow';
import { SecretSealer, serverRef } from '../store/secret-sealer';
import { ServerCache } from '../connections/server-cache';
import { exists, inputOf } from './server-steps';
import { toWireServer } from './server.mapper';
import { TargetBuilder } from '../connections/target-builder';
import { ServersRepository } from '../store/servers.repository';

/** mcp.oauth.complete: a server being added is connected and stored; a stored one is authorized again. */
@Injectable()
export class CompleteAuthorization {
  private readonly log = new Logger(CompleteAuthorization.name);

  constructor(
    private readonly add: AddServer,
    private readonly authorizations: AuthorizationCodeFlow,
    private readonly servers: ServersRepository,
    private readonly targets: TargetBuilder,
    private readonly sealer: SecretSealer,
    private readonly tokens: OAuthTokenStore,
    private readonly cache: ServerCache,
    private readonly pool: ConnectionPool,
    private readonly sync: SyncService,
    private readonly events: ConnectionEvents,
    private readonly accounts: AccountQueries,
  ) {}

  /**
   * The code came back: exchange it (tokens stored by the credentials service), then connect, store
   * and sync a server being added — or, for a stored server that needed authorizing again (refresh
   * refused, step-up), keep what OAuth learned, clear its pending authorization and resync it.
   */
  async completeOAuth(req: RequestOf<typeof McpOAuthComplete>): Promise<ReplyOf<typeof McpOAuthComplete>> {
    const done = await this.authorizations.complete(req.org_id, req.state, req.code, req.user_id, async (serverId) => {
      const row = await this.servers.findById(req.org_id, serverId);
      if (!row)
        throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `The MCP server ${serverId} was removed`, {
          server: serverId,
        });
      return inputOf(row, (await this.targets.of(row)).secrets);
    });
    if (done.userId) return this.connected(req.org_id, done.serverId, done.serverName, done.userId);
    if (!done.input) return this.reauthorized(req.org_id, done.serverId, done.oauth);
    const input = done.input;
    try {
      if (await this.servers.findByName(req.org_id, input.name)) throw exists(input.name);
      return await this.add.connectAndStore(req.org_id, done.serverId, input, done.oauth);
    } catch (e) {
      await this.tokens
        .forget(req.org_id, done.serverId)
        .catch((err: Error) => this.log.warn(`could not delete the OAuth tokens of ${done.serverId}: ${err.message}`));
      throw e;
    }
  }

  /** An end user connected their account: their sessions (if any) start over with their token; the org's are untouched. */
  private async connected(
    orgId: string,
    serverId: string,
    serverName: string,
    userId: string,
  ): Promise<ReplyOf<typeof McpOAuthComplete>> {
    await this.pool.dropUser(serverId, userId);
    this.log.log(`an end user of org ${orgId} connected MCP server ${serverName} (${serverId})`);
    await this.events.publish('authorized', { orgId, userId, serverId, serverName });
    return { connection: await this.accounts.one(orgId, userId, serverId) };
  }

  private async reauthorized(orgId: string, id: string, oauth: OAuthState): Promise<ReplyOf<typeof McpOAuthComplete>> {
    const row = await this.servers.findById(orgId, id);
    if (!row)
      throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `The MCP server ${id} was removed`, { server: id });
    const secrets = (await this.targets.of(row)).secrets;
    await this.servers.keepSecrets(id, await this.sealer.seal({ ...secrets, oauth }, serverRef(orgId, id)));
    await this.servers.setPendingAuthorization(id, null);
    this.cache.invalidate(orgId, id);
    // Sessions opened with the old token go: the next ones carry the new one.
    await this.pool.drop(id);
    this.log.log(`MCP server ${row.name} (${id}) of org ${orgId} is authorized again`);
    const { server, report } = await this.sync.sync((await this.servers.findById(orgId, id)) ?? row, 'manual');
    return { server: toWireServer(server), sync: report };
  }
}
