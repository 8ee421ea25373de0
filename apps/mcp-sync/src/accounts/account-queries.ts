import { Injectable } from '@nestjs/common';
import {
  ErrorCode,
  MCP_SERVER_ID,
  ToolplaneError,
  type ConnectionsList,
  type McpConnection,
  type OAuthTokenRecord,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { OAuthTokenStore } from '../connections/oauth-token-store';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { ServersRepository } from '../store/servers.repository';

/**
 * Connected accounts as connections.list and .get show them: which token records the credentials
 * service holds for the org's servers (the org's, and each end user's of an `account: "user"`
 * server), with their scope and times. Never a token: the records are listed, never opened.
 */
@Injectable()
export class AccountQueries {
  constructor(
    private readonly servers: ServersRepository,
    private readonly tokens: OAuthTokenStore,
  ) {}

  /** The org's server named by id or name. */
  async server(orgId: string, key: string): Promise<McpServerEntity> {
    const s = MCP_SERVER_ID.test(key)
      ? await this.servers.findById(orgId, key)
      : await this.servers.findByName(orgId, key);
    if (!s)
      throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `No MCP server ${key} in this org`, { server: key });
    return s;
  }

  async list(req: RequestOf<typeof ConnectionsList>): Promise<ReplyOf<typeof ConnectionsList>> {
    const only = req.server !== undefined ? await this.server(req.org_id, req.server) : undefined;
    const records = await this.tokens.list(req.org_id, {
      ...(only ? { serverId: only.id } : {}),
      ...(req.user_id ? { userId: req.user_id } : {}),
    });
    const byId = new Map((only ? [only] : await this.servers.listByOrg(req.org_id)).map((s) => [s.id, s]));
    return {
      connections: records.flatMap((r) => (byId.has(r.server_id) ? [toConnection(r, byId.get(r.server_id)!)] : [])),
    };
  }

  /** One user's connection to one server, or CONNECTION_NOT_FOUND. */
  async one(orgId: string, userId: string, serverKey: string): Promise<McpConnection> {
    const s = await this.server(orgId, serverKey);
    const [record] = await this.tokens.list(orgId, { serverId: s.id, userId });
    if (!record)
      throw new ToolplaneError(
        ErrorCode.CONNECTION_NOT_FOUND,
        `This user has not connected MCP server ${s.name}`,
        { server_id: s.id, server_name: s.name },
        false,
      );
    return toConnection(record, s);
  }
}

function toConnection(r: OAuthTokenRecord, s: McpServerEntity): McpConnection {
  return {
    server_id: s.id,
    server_name: s.name,
    user_id: r.user_id,
    account: r.user_id === null ? 'org' : 'user',
    scopes: (r.scope ?? '').split(' ').filter(Boolean),
    connected_at: r.created_at,
    refreshed_at: r.updated_at,
    expires_at: r.expires_at,
  };
}
