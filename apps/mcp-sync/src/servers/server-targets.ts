import { Injectable } from '@nestjs/common';
import type { ServerTarget } from '../connections/connection-pool';
import type { McpServerEntity } from './mcp-server.entity';
import { SecretSealer, secretsAad } from './secret-sealer';

/** A stored server → what the connection pool needs (secrets opened, in memory only). */
@Injectable()
export class ServerTargets {
  constructor(private readonly sealer: SecretSealer) {}

  of(s: McpServerEntity): ServerTarget {
    return {
      id: s.id,
      orgId: s.orgId,
      name: s.name,
      transport: s.transport,
      command: s.command,
      args: s.args ?? [],
      url: s.url,
      version: s.updatedAt.getTime(),
      secrets: this.sealer.open(s.sealedSecrets, secretsAad(s.orgId, s.id)),
    };
  }
}
