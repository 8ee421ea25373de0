import { main } from '@toolplane/platform';
import { loadMcpSyncConfig } from './mcp-sync.config';
import { McpSyncModule } from './mcp-sync.module';

main(() => ({ name: 'mcp-sync', config: loadMcpSyncConfig(), module: McpSyncModule }));
