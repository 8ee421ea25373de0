import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { OAuthClient } from '../connections/oauth-client';
import type { McpSyncConfig } from '../mcp-sync.config';
import { SecretSealer, serverRef } from '../store/secret-sealer';
import { TargetBuilder } from '../connections/target-builder';
import { ServersRepository } from '../store/servers.repository';

/**
 * What is sealed with the stored servers stays current: rows sealed under an old key of the ring
 * (or the legacy MCP_ENCRYPTION_KEY) are sealed again, and what an OAuth flow learns of a stored
 * server (re-discovery, a new registration) is kept with it.
 */
@Injectable()
export class ServerSecretsKeeper implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ServerSecretsKeeper.name);
  private resealTimer?: NodeJS.Timeout;
  private resealInterval?: NodeJS.Timeout;

  constructor(
    private readonly servers: ServersRepository,
    private readonly sealer: SecretSealer,
    private readonly targets: TargetBuilder,
    private readonly oauthTokens: OAuthClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  onModuleDestroy(): void {
    clearTimeout(this.resealTimer);
    clearInterval(this.resealInterval);
  }

  onModuleInit(): void {
    // Rows sealed under an old key of the ring, or the legacy MCP_ENCRYPTION_KEY, are sealed again:
    // at start (retried until the credentials service answers) and every MCP_RESEAL_INTERVAL_MS.
    const sweep = async (attempt: number): Promise<void> => {
      try {
        const r = await this.targets.resealAll();
        if (r.servers)
          this.log.log(
            `checked the sealed secrets of ${r.servers} MCP server(s)${r.failed ? ` (${r.failed} could not be opened)` : ''}`,
          );
      } catch (e) {
        if (attempt < 20) this.resealTimer = setTimeout(() => void sweep(attempt + 1), 3000).unref();
        else this.log.warn(`could not check the sealed secrets of the MCP servers: ${(e as Error).message}`);
      }
    };
    this.resealTimer = setTimeout(() => void sweep(0), 1000).unref();
    if (this.config.MCP_RESEAL_INTERVAL_MS > 0)
      this.resealInterval = setInterval(() => void sweep(20), this.config.MCP_RESEAL_INTERVAL_MS).unref();
    // A flow that learned something new of a stored server (re-discovery, a new registration) keeps it.
    this.oauthTokens.onStateChange(async (t) => {
      const row = await this.servers.findById(t.orgId, t.serverId);
      if (!row) return; // being added: the state is sealed with the new row
      const secrets = (await this.targets.of(row)).secrets;
      if (secrets.auth?.type !== 'oauth' || row.url !== t.url) return;
      await this.servers.keepSecrets(
        row.id,
        await this.sealer.seal({ ...secrets, oauth: t.state }, serverRef(row.orgId, row.id)),
      );
    });
  }
}
