import type { OwnedSchema } from '@toolplane/platform';
import { McpServerEntity } from '../store/mcp-server.entity';
import { OAuthAuthorizationEntity } from '../store/oauth-authorization.entity';
import { CreateMcpServers1764100000000 } from './migrations/1764100000000-create-mcp-servers';
import { CreateOAuthAuthorizations1764300000000 } from './migrations/1764300000000-create-oauth-authorizations';
import { AddPendingAuthorization1764500000000 } from './migrations/1764500000000-add-pending-authorization';
import { AddConnectedAccounts1764700000000 } from './migrations/1764700000000-add-connected-accounts';

/** mcp-sync owns the `mcp` schema and nothing else. */
export const MCP_DB: OwnedSchema = {
  schema: 'mcp',
  entities: [McpServerEntity, OAuthAuthorizationEntity],
  migrations: [
    CreateMcpServers1764100000000,
    CreateOAuthAuthorizations1764300000000,
    AddPendingAuthorization1764500000000,
    AddConnectedAccounts1764700000000,
  ],
};
