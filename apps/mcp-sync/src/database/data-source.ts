import type { OwnedSchema } from '@toolplane/platform';
import { McpServerEntity } from '../servers/mcp-server.entity';
import { CreateMcpServers1764100000000 } from './migrations/1764100000000-create-mcp-servers';

/** mcp-sync owns the `mcp` schema and nothing else. */
export const MCP_DB: OwnedSchema = {
  schema: 'mcp',
  entities: [McpServerEntity],
  migrations: [CreateMcpServers1764100000000],
};
