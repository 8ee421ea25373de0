import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpServerInput } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { ConnectionPool } from '../connections/connection-pool';
import type { OAuthState } from '../connections/oauth-provider';
import { OAuthTokenStore } from '../connections/oauth-token-store';
import type { McpSyncConfig } from '../mcp-sync.config';
import { SyncScheduler } from '../sync/sync.scheduler';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { SecretSealer, serverRef, type ServerSecrets } from '../store/secret-sealer';
import { ServersRepository, type ServerFields } from '../store/servers.repository';

export type ServerLookup = { org_id: string; id?: string; name?: string };

/** The steps the server use cases share: finding a server, the checks before connecting, the stored fields, forgetting tokens. */
@Injectable()
export class ServerSteps {
  private readonly log = new Logger(ServerSteps.name);

  constructor(
    private readonly servers: ServersRepository,
    private readonly sealer: SecretSealer,
    private readonly pool: ConnectionPool,
    private readonly scheduler: SyncScheduler,
    private readonly tokens: OAuthTokenStore,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async find(ref: ServerLookup): Promise<McpServerEntity> {
    const s = ref.id
      ? await this.servers.findById(ref.org_id, ref.id)
      : await this.servers.findByName(ref.org_id, ref.name!);
    if (!s)
      throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `No MCP server ${ref.id ?? ref.name} in this org`, {
        server: ref.id ?? ref.name,
      });
    return s;
  }

  async forgetTokens(orgId: string, serverId: string): Promise<void> {
    await this.tokens
      .forget(orgId, serverId)
      .catch((e: Error) => this.log.warn(`could not delete the OAuth tokens of MCP server ${serverId}: ${e.message}`));
  }

  /** Refusals that need no connection: stdio disabled here or a command not allowlisted, a URL the SSRF rules forbid. */
  async checkReachable(s: McpServerInput): Promise<void> {
    if (s.transport === 'stdio' && !this.config.MCP_STDIO_ENABLED) {
      throw new ToolplaneError(
        ErrorCode.MCP_TRANSPORT_DISABLED,
        'stdio MCP servers are disabled here (MCP_STDIO_ENABLED=false; off by default in production)',
        undefined,
        false,
      );
    }
    if (s.transport === 'stdio')
      this.pool.stdio.check(s.command!, s.args ?? [], Object.fromEntries(Object.keys(s.env ?? {}).map((k) => [k, ''])));
    if (s.url) await this.pool.urlGuard.check(s.url);
    if (s.auth?.type === 'oauth') {
      for (const u of [s.auth.issuer, s.auth.authorization_url, s.auth.token_url, s.auth.registration_url])
        if (u) await this.pool.urlGuard.check(u);
    }
  }

  async fields(orgId: string, id: string, s: McpServerInput, secrets: ServerSecrets): Promise<ServerFields> {
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
      account: s.auth?.type === 'oauth' && s.auth.account === 'user' ? 'user' : 'org',
    };
  }

  nextSyncAt(): Date {
    return new Date(Date.now() + this.scheduler.nextResyncInMs());
  }
}

/** A stored server's settings as its input (secrets included, memory only). */
export function inputOf(row: McpServerEntity, secrets: ServerSecrets): McpServerInput {
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

export function secretsOf(s: McpServerInput, oauth?: OAuthState): ServerSecrets {
  return stripUndefined({
    env: s.env,
    headers: s.headers,
    auth: s.auth,
    oauth: s.auth?.type === 'oauth' ? (oauth ?? {}) : undefined,
  });
}

export function exists(name: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.MCP_SERVER_EXISTS, `The org already has an MCP server named ${name}`, { name });
}

export function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
