import { runMigrationsCli } from '@toolplane/platform';
import { loadMcpSyncConfig } from '../mcp-sync.config';
import { MCP_DB } from './data-source';

/** `npm run migrate` and the Kubernetes migration Job: apply pending migrations, then exit. */
runMigrationsCli(MCP_DB, loadMcpSyncConfig().DATABASE_URL);
