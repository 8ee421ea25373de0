import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import {
  ErrorCode,
  ExternalToolsSync,
  McpServerInput,
  McpServerRemoved,
  ToolplaneError,
  type McpOAuthComplete,
  type McpServersAdd,
  type McpServersGet,
  type McpServersList,
  type McpServersRemove,
  type McpServersSync,
  type McpServersUpdate,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient, parseContract } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import { ConnectionPool } from '../connections/connection-pool';
import type { OAuthState } from '../connections/oauth-provider';
import { OAuthTokenStore } from '../connections/oauth-token-store';
import { OAuthTokens } from '../connections/oauth-tokens';
import type { McpSyncConfig } from '../mcp-sync.config';
import { SyncScheduler } from '../sync/sync.scheduler';
import { SyncService } from '../sync/sync.service';
import type { McpServerEntity } from './mcp-server.entity';
import { isAuthorizationCode, OAuthAuthorizationsService } from './oauth-authorizations.service';
import { SecretSealer, serverRef, type ServerSecrets } from './secret-sealer';
import { ServerCache } from './server-cache';
import { toWireServer } from './server.mapper';
import { ServerTargets } from './server-targets';
import { DuplicateServerName, ServersRepository, type ServerFields } from './servers.repository';

type Ref = { org_id: string; id?: string; name?: string };

@Injectable()
export class ServersService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ServersService.name);
  private resealTimer?: NodeJS.Timeout;
  private resealInterval?: NodeJS.Timeout;

  onModuleDestroy(): void {
    clearTimeout(this.resealTimer);
    clearInterval(this.resealInterval);
  }

  constructor(
    private readonly servers: ServersRepository,
    private readonly sealer: SecretSealer,
    private readonly targets: ServerTargets,
    private readonly pool: ConnectionPool,
    private readonly sync: SyncService,
    private readonly scheduler: SyncScheduler,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
    private readonly authorizations: OAuthAuthorizationsService,
    private readonly tokens: OAuthTokenStore,
    private readonly cache: ServerCache,
    private readonly oauthTokens: OAuthTokens,
  ) {}

  onModuleInit(): void {
    // Rows sealed under an old key of the ring, or the legacy MCP_ENCRYPTION_KEY, are sealed again:
    // at start (retried until the credentials service answers) and every MCP_RESEAL_INTERVAL_MS.
    const sweep = async (attempt: number): Promise<void> => {
      try {
        const r = await this.targets.resealAll();
        if (r.servers) this.log.log(`checked the sealed secrets of ${r.servers} MCP server(s)${r.failed ? ` (${r.failed} could not be opened)` : ''}`);
      } catch (e) {
        if (attempt < 20) this.resealTimer = setTimeout(() => void sweep(attempt + 1), 3000).unref();
        else this.log.warn(`could not check the sealed secrets of the MCP servers: ${(e as Error).message}`);
      }
    };
    this.resealTimer = setTimeout(() => void sweep(0), 1000).unref();
    if (this.config.MCP_RESEAL_INTERVAL_MS > 0) this.resealInterval = setInterval(() => void sweep(20), this.config.MCP_RESEAL_INTERVAL_MS).unref();
    // A flow that learned something new of a stored server (re-discovery, a new registration) keeps it.
    this.oauthTokens.onStateChange(async (t) => {
      const row = await this.servers.findById(t.orgId, t.serverId);
      if (!row) return; // being added: the state is sealed with the new row
      const secrets = (await this.targets.of(row)).secrets;
      if (secrets.auth?.type !== 'oauth' || row.url !== t.url) return;
      await this.servers.keepSecrets(row.id, await this.sealer.seal({ ...secrets, oauth: t.state }, serverRef(row.orgId, row.id)));
    });
  }

  /**
   * Connect and list first: a server that cannot be reached is not stored. An OAuth
   * authorization-code server is not connected yet: the reply is its authorization URL.
   */
  async add(req: RequestOf<typeof McpServersAdd>): Promise<ReplyOf<typeof McpServersAdd>> {
    const input = req.server;
    await this.checkReachable(input);
    if (await this.servers.findByName(req.org_id, input.name)) throw exists(input.name);
    const id = `mcp-${randomUUID()}`;
    const auth = input.auth;
    if (isAuthorizationCode(auth)) return { authorization: await this.authorizations.begin(req.org_id, id, { ...input, auth }) };
    return this.connectAndStore(req.org_id, id, input);
  }

  /**
   * The code came back: exchange it (tokens stored by the credentials service), then connect, store
   * and sync a server being added — or, for a stored server that needed authorizing again (refresh
   * refused, step-up), keep what OAuth learned, clear its pending authorization and resync it.
   */
  async completeOAuth(req: RequestOf<typeof McpOAuthComplete>): Promise<ReplyOf<typeof McpOAuthComplete>> {
    const done = await this.authorizations.complete(req.org_id, req.state, req.code, async (serverId) => {
      const row = await this.servers.findById(req.org_id, serverId);
      if (!row) throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `The MCP server ${serverId} was removed`, { server: serverId });
      return inputOf(row, (await this.targets.of(row)).secrets);
    });
    if (!done.input) return this.reauthorized(req.org_id, done.serverId, done.oauth);
    const input = done.input;
    try {
      if (await this.servers.findByName(req.org_id, input.name)) throw exists(input.name);
      return await this.connectAndStore(req.org_id, done.serverId, input, done.oauth);
    } catch (e) {
      await this.tokens.forget(req.org_id, done.serverId).catch((err: Error) => this.log.warn(`could not delete the OAuth tokens of ${done.serverId}: ${err.message}`));
      throw e;
    }
  }

  private async reauthorized(orgId: string, id: string, oauth: OAuthState): Promise<ReplyOf<typeof McpOAuthComplete>> {
    const row = await this.servers.findById(orgId, id);
    if (!row) throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `The MCP server ${id} was removed`, { server: id });
    const secrets = (await this.targets.of(row)).secrets;
    await this.servers.keepSecrets(id, await this.sealer.seal({ ...secrets, oauth }, serverRef(orgId, id)));
    await this.servers.setPendingAuthorization(id, null);
    this.cache.invalidate(id);
    // Sessions opened with the old token go: the next ones carry the new one.
    await this.pool.drop(id);
    this.log.log(`MCP server ${row.name} (${id}) of org ${orgId} is authorized again`);
    const { server, report } = await this.sync.sync((await this.servers.findById(orgId, id)) ?? row, 'manual');
    return { server: toWireServer(server), sync: report };
  }

  private async connectAndStore(orgId: string, id: string, input: McpServerInput, oauth?: OAuthState): Promise<ReplyOf<typeof McpOAuthComplete>> {
    // One state object from here on: what the connection's OAuth flow learns is sealed with the server.
    const secrets = secretsOf(input, oauth);
    const started = performance.now();
    let discovery;
    try {
      discovery = await this.sync.discover(
        { id, orgId: orgId, name: input.name, transport: input.transport, command: input.command ?? null, args: input.args ?? [], url: input.url ?? null, version: 0, secrets, pendingInput: input },
        1,
      );
    } catch (e) {
      await this.pool.drop(id);
      throw e;
    }
    let server: McpServerEntity;
    try {
      server = await this.servers.insert({ id, orgId: orgId, name: input.name, ...(await this.fields(orgId, id, input, secrets)), nextSyncAt: this.nextSyncAt() });
    } catch (e) {
      await this.pool.drop(id);
      if (e instanceof DuplicateServerName) throw exists(input.name);
      throw e;
    }
    this.pool.retag(id, server.updatedAt.getTime());
    try {
      const { server: synced, report } = await this.sync.apply(server, discovery, 'add', started);
      this.log.log(`added MCP server ${server.name} (${server.id}) to org ${orgId}`);
      return { server: toWireServer(synced), sync: report };
    } catch (e) {
      // The registry did not take the tools: leave nothing behind.
      await this.servers.delete(id);
      await this.pool.drop(id);
      throw e;
    }
  }

  async get(req: RequestOf<typeof McpServersGet>): Promise<ReplyOf<typeof McpServersGet>> {
    return { server: toWireServer(await this.find(req)) };
  }

  async list(req: RequestOf<typeof McpServersList>): Promise<ReplyOf<typeof McpServersList>> {
    return { servers: (await this.servers.listByOrg(req.org_id)).map(toWireServer) };
  }

  /** Fields given replace the stored ones; the merged settings must form a valid server. Then a resync. */
  async update(req: RequestOf<typeof McpServersUpdate>): Promise<ReplyOf<typeof McpServersUpdate>> {
    const current = await this.find(req);
    const old = await this.targets.of(current);
    const patch = req.server;
    const transport = patch.transport ?? current.transport;
    const switched = transport !== current.transport;
    const merged = parseContract(
      McpServerInput,
      stripUndefined({
        name: current.name,
        transport,
        command: patch.command ?? (switched ? undefined : (current.command ?? undefined)),
        args: patch.args ?? (switched ? undefined : current.args),
        env: patch.env ?? old.secrets.env,
        url: patch.url ?? (switched ? undefined : (current.url ?? undefined)),
        headers: patch.headers ?? old.secrets.headers,
        auth: patch.auth ?? old.secrets.auth,
        tool_prefix: patch.tool_prefix ?? current.toolPrefix ?? undefined,
      }),
      'The updated server',
    );
    await this.checkReachable(merged);
    // New OAuth settings or a new URL: what was learned and the tokens obtained under the old ones are not reused.
    const oauthKept = old.secrets.auth?.type === 'oauth' && JSON.stringify(old.secrets.auth) === JSON.stringify(merged.auth) && (current.url ?? undefined) === merged.url;
    const updated = await this.servers.update(current.id, await this.fields(current.orgId, current.id, merged, secretsOf(merged, oauthKept ? old.secrets.oauth : undefined)));
    this.cache.invalidate(current.id);
    await this.pool.drop(current.id);
    if (old.secrets.auth?.type === 'oauth' && !oauthKept) await this.forgetTokens(current.orgId, current.id);
    const { server, report } = await this.sync.sync(updated, 'update');
    return { server: toWireServer(server), sync: report };
  }

  async remove(req: RequestOf<typeof McpServersRemove>): Promise<ReplyOf<typeof McpServersRemove>> {
    const found = await this.find(req);
    // After any sync of it running here; the row goes before the tools (see SyncService.undoIfRemoved).
    const { server, reply } = await this.sync.exclusive(found.id, async () => {
      const server = (await this.servers.findById(found.orgId, found.id)) ?? found;
      await this.servers.delete(server.id);
      this.cache.invalidate(server.id);
      await this.pool.drop(server.id);
      try {
        const reply = await this.messaging.request(
          ExternalToolsSync,
          { org_id: server.orgId, tool_type: 'external_mcp', source_id: server.id, tools: [], complete: true },
          { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS },
        );
        return { server, reply };
      } catch (e) {
        // The tools could not be removed: put the server back, so that the removal can be retried.
        await this.servers.restore(server).catch((r: Error) => this.log.error(`could not restore MCP server ${server.id} after a failed removal: ${r.message}`));
        throw e;
      }
    });
    if (server.authType === 'oauth') await this.forgetTokens(server.orgId, server.id);
    const eventId = randomUUID();
    await this.messaging.publish(
      McpServerRemoved,
      { event_id: eventId, occurred_at: new Date().toISOString(), org_id: server.orgId, server_id: server.id, server_name: server.name, tools_removed: reply.removed.length },
      eventId,
    );
    this.log.log(`removed MCP server ${server.name} (${server.id}) and ${reply.removed.length} tool(s) from org ${server.orgId}`);
    return { removed: true, tools_removed: reply.removed.length };
  }

  async syncNow(req: RequestOf<typeof McpServersSync>): Promise<ReplyOf<typeof McpServersSync>> {
    const { server, report } = await this.sync.sync(await this.find(req), 'manual');
    return { server: toWireServer(server), sync: report };
  }

  private async forgetTokens(orgId: string, serverId: string): Promise<void> {
    await this.tokens.forget(orgId, serverId).catch((e: Error) => this.log.warn(`could not delete the OAuth tokens of MCP server ${serverId}: ${e.message}`));
  }

  private async find(ref: Ref): Promise<McpServerEntity> {
    const s = ref.id ? await this.servers.findById(ref.org_id, ref.id) : await this.servers.findByName(ref.org_id, ref.name!);
    if (!s) throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `No MCP server ${ref.id ?? ref.name} in this org`, { server: ref.id ?? ref.name });
    return s;
  }

  /** Refusals that need no connection: stdio disabled here or a command not allowlisted, a URL the SSRF rules forbid. */
  private async checkReachable(s: McpServerInput): Promise<void> {
    if (s.transport === 'stdio' && !this.config.MCP_STDIO_ENABLED) {
      throw new ToolplaneError(ErrorCode.MCP_TRANSPORT_DISABLED, 'stdio MCP servers are disabled here (MCP_STDIO_ENABLED=false; off by default in production)', undefined, false);
    }
    if (s.transport === 'stdio') this.pool.stdio.check(s.command!, s.args ?? [], Object.fromEntries(Object.keys(s.env ?? {}).map((k) => [k, ''])));
    if (s.url) await this.pool.urlGuard.check(s.url);
    if (s.auth?.type === 'oauth') {
      for (const u of [s.auth.issuer, s.auth.authorization_url, s.auth.token_url, s.auth.registration_url]) if (u) await this.pool.urlGuard.check(u);
    }
  }

  private async fields(orgId: string, id: string, s: McpServerInput, secrets: ServerSecrets): Promise<ServerFields> {
    const hasSecrets = Object.keys(secrets).length > 0;
    return {
      transport: s.transport,
      command: s.command ?? null,
      args: s.args ?? [],
      url: s.url ?? null,
      toolPrefix: s.tool_prefix ?? null,
      sealedSecrets: hasSecrets ? await this.sealer.seal(secrets, serverRef(orgId, id)) : null,
      envKeys: Object.keys(s.env ?? {}),
      headerNames: Object.keys(s.headers ?? {}),
      authType: s.auth?.type ?? null,
    };
  }

  private nextSyncAt(): Date {
    return new Date(Date.now() + this.scheduler.nextResyncInMs());
  }
}

/** A stored server's settings as its input (secrets included, memory only). */
function inputOf(row: McpServerEntity, secrets: ServerSecrets): McpServerInput {
  return stripUndefined({
    name: row.name,
    transport: row.transport,
    command: row.command ?? undefined,
    args: row.command ? row.args : undefined,
    url: row.url ?? undefined,
    env: secrets.env,
    headers: secrets.headers,
    auth: secrets.auth,
    tool_prefix: row.toolPrefix ?? undefined,
  }) as McpServerInput;
}

function secretsOf(s: McpServerInput, oauth?: OAuthState): ServerSecrets {
  return stripUndefined({ env: s.env, headers: s.headers, auth: s.auth, oauth: s.auth?.type === 'oauth' ? (oauth ?? {}) : undefined });
}

function exists(name: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.MCP_SERVER_EXISTS, `The org already has an MCP server named ${name}`, { name });
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
