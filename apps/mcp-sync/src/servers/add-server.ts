import { Injectable, Logger } from '@nestjs/common';
import {
  type McpServer,
  type McpServerInput,
  type McpServersAdd,
  type McpSyncReport,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import { ConnectionPool } from '../connections/connection-pool';
import type { OAuthState } from '../connections/oauth-provider';
import { SyncProgress } from '../sync/sync-progress';
import { SyncService } from '../sync/sync.service';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { isAuthorizationCode, AuthorizationCodeFlow } from './authorization-code-flow';
import { exists, secretsOf, ServerSteps } from './server-steps';
import { toWireServer } from './server.mapper';
import { DuplicateServerName, ServersRepository } from '../store/servers.repository';

/** mcp.servers.add: a server is stored only once it was reached and listed (or an authorization URL is answered). */
@Injectable()
export class AddServer {
  private readonly log = new Logger(AddServer.name);

  constructor(
    private readonly records: ServerSteps,
    private readonly servers: ServersRepository,
    private readonly authorizations: AuthorizationCodeFlow,
    private readonly pool: ConnectionPool,
    private readonly sync: SyncService,
    private readonly messaging: MessagingClient,
  ) {}

  /**
   * Connect and list first: a server that cannot be reached is not stored. An OAuth
   * authorization-code server is not connected yet: the reply is its authorization URL.
   */
  async add(req: RequestOf<typeof McpServersAdd>): Promise<ReplyOf<typeof McpServersAdd>> {
    const input = req.server;
    await this.records.checkReachable(input);
    if (await this.servers.findByName(req.org_id, input.name)) throw exists(input.name);
    const id = `mcp-${randomUUID()}`;
    const auth = input.auth;
    if (isAuthorizationCode(auth))
      return { authorization: await this.authorizations.begin(req.org_id, id, { ...input, auth }) };
    return this.connectAndStore(req.org_id, id, input);
  }

  /** Discover (connect, list), store, then apply the first sync; nothing is left behind when a step fails. */
  async connectAndStore(
    orgId: string,
    id: string,
    input: McpServerInput,
    oauth?: OAuthState,
  ): Promise<{ server: McpServer; sync: McpSyncReport }> {
    // One state object from here on: what the connection's OAuth flow learns is sealed with the server.
    const secrets = secretsOf(input, oauth);
    const started = performance.now();
    // The first sync's live progress (mcp-server.progressed): its pages as they are listed, then the write.
    const progress = new SyncProgress(this.messaging, { id, orgId, name: input.name }, 'add');
    let discovery;
    try {
      discovery = await this.sync.discover(
        {
          id,
          orgId: orgId,
          name: input.name,
          transport: input.transport,
          command: input.command ?? null,
          args: input.args ?? [],
          url: input.url ?? null,
          version: 0,
          secrets,
          pendingInput: input,
        },
        1,
        progress,
      );
    } catch (e) {
      await this.pool.drop(id);
      throw e;
    }
    let server: McpServerEntity;
    try {
      server = await this.servers.insert({
        id,
        orgId: orgId,
        name: input.name,
        ...(await this.records.fields(orgId, id, input, secrets)),
        nextSyncAt: this.records.nextSyncAt(),
      });
    } catch (e) {
      await this.pool.drop(id);
      if (e instanceof DuplicateServerName) throw exists(input.name);
      throw e;
    }
    this.pool.retag(id, server.updatedAt.getTime());
    try {
      const { server: synced, report } = await this.sync.apply(server, discovery, 'add', started, progress);
      this.log.log(`added MCP server ${server.name} (${server.id}) to org ${orgId}`);
      return { server: toWireServer(synced), sync: report };
    } catch (e) {
      // The registry did not take the tools: leave nothing behind.
      await this.servers.delete(id);
      await this.pool.drop(id);
      throw e;
    }
  }
}
