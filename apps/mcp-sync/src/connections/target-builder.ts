import { Injectable, Logger } from '@nestjs/common';
import type { ServerTarget } from './connection-pool';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { SecretSealer, serverRef } from '../store/secret-sealer';
import { ServersRepository } from '../store/servers.repository';

/**
 * A stored server → what the connection pool needs (secrets opened, in memory only). Secrets found
 * sealed under a key that is no longer the key ring's active one, or under the legacy
 * MCP_ENCRYPTION_KEY, are sealed again on the way (rotation and migration), without changing the
 * server's version.
 */
@Injectable()
export class TargetBuilder {
  private readonly log = new Logger(TargetBuilder.name);

  constructor(
    private readonly sealer: SecretSealer,
    private readonly servers: ServersRepository,
  ) {}

  async of(s: McpServerEntity): Promise<ServerTarget> {
    const { value: secrets, stale } = await this.sealer.open(s.sealedSecrets, serverRef(s.orgId, s.id));
    if (stale) await this.reseal(s, secrets);
    return {
      id: s.id,
      orgId: s.orgId,
      name: s.name,
      transport: s.transport,
      command: s.command,
      args: s.args ?? [],
      url: s.url,
      version: s.updatedAt.getTime(),
      secrets,
    };
  }

  /** Opens every stored server's secrets (sealing stale ones again): the migration and rotation sweep. */
  async resealAll(): Promise<{ servers: number; failed: number }> {
    let failed = 0;
    const rows = await this.servers.listAll();
    for (const row of rows) {
      try {
        await this.of(row);
      } catch (e) {
        failed += 1;
        this.log.warn(`could not check the sealed secrets of MCP server ${row.id}: ${(e as Error).message}`);
      }
    }
    return { servers: rows.length, failed };
  }

  private async reseal(s: McpServerEntity, secrets: object): Promise<void> {
    try {
      s.sealedSecrets = await this.sealer.seal(secrets, serverRef(s.orgId, s.id));
      await this.servers.keepSecrets(s.id, s.sealedSecrets);
      this.log.log(`sealed the secrets of MCP server ${s.id} again under the credentials key ring's active key`);
    } catch (e) {
      // Still readable as they are: sealed again next time.
      this.log.warn(`could not seal the secrets of MCP server ${s.id} again: ${(e as Error).message}`);
    }
  }
}
