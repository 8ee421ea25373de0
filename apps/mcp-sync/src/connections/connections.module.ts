import { Logger, Module } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import type { McpSyncConfig } from '../mcp-sync.config';
import { StoreModule } from '../store/store.module';
import { ConnectionEvents } from './connection-events';
import { ConnectionPool } from './connection-pool';
import { OAuthTokenStore } from './oauth-token-store';
import { OAuthClient } from './oauth-client';
import { OrgDeletions } from './org-deletions';
import { ServerCache } from './server-cache';
import { TargetBuilder } from './target-builder';
import { StdioPolicy } from './stdio-policy';

function stdioPolicy(c: McpSyncConfig): StdioPolicy {
  const log = new Logger('StdioPolicy');
  if (c.MCP_STDIO_ENABLED && c.MCP_STDIO_ISOLATION === 'unsafe')
    log.warn(
      '!!! MCP_STDIO_ISOLATION=unsafe: allowlisted stdio MCP servers run as plain child processes of mcp-sync, without a sandbox !!!',
    );
  if (c.MCP_STDIO_ENABLED)
    log.log(
      `stdio MCP servers: ${c.MCP_STDIO_ALLOWED_COMMANDS.length} allowlisted command(s), isolation ${c.MCP_STDIO_ISOLATION}`,
    );
  const root = process.getuid?.() === 0;
  const policy = new StdioPolicy({
    allowed: c.MCP_STDIO_ALLOWED_COMMANDS,
    isolation: c.MCP_STDIO_ISOLATION,
    bwrapPath: c.MCP_STDIO_BWRAP,
    workRoot: c.MCP_STDIO_WORK_ROOT,
    ...(root ? { runAs: { uid: c.MCP_STDIO_RUN_AS_UID, gid: c.MCP_STDIO_RUN_AS_GID } } : {}),
  });
  if (c.MCP_STDIO_ENABLED) {
    void policy.unreadable().then((paths) => {
      if (paths.length)
        log.warn(
          `allowlisted stdio paths the sandbox user (uid ${c.MCP_STDIO_RUN_AS_UID}) cannot read, so those servers cannot start: ${paths.join(', ')}`,
        );
    });
  }
  return policy;
}

@Module({
  imports: [StoreModule],
  providers: [
    ConnectionPool,
    ConnectionEvents,
    OAuthClient,
    OAuthTokenStore,
    OrgDeletions,
    TargetBuilder,
    ServerCache,
    { provide: StdioPolicy, inject: [APP_CONFIG], useFactory: stdioPolicy },
  ],
  exports: [ConnectionPool, ConnectionEvents, OAuthClient, OAuthTokenStore, StdioPolicy, TargetBuilder, ServerCache],
})
export class ConnectionsModule {}
