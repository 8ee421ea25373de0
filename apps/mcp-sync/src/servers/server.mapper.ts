import type { McpServer, McpSyncReport } from '@toolplane/contracts';
import type { McpServerEntity } from '../store/mcp-server.entity';

/** Row → the API's server: names of env vars and headers, the auth type, never a value. */
export function toWireServer(s: McpServerEntity): McpServer {
  return {
    id: s.id,
    name: s.name,
    transport: s.transport,
    command: s.command,
    args: s.args ?? [],
    url: s.url,
    env_keys: s.envKeys ?? [],
    header_names: s.headerNames ?? [],
    auth_type: s.authType,
    account: s.account ?? 'org',
    pending_authorization: s.pendingAuthorization ?? null,
    tool_prefix: s.toolPrefix,
    tool_count: s.toolCount,
    last_sync: s.lastSync ? { ...s.lastSync, report: (s.lastSync.report as McpSyncReport | null) ?? null } : null,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}
