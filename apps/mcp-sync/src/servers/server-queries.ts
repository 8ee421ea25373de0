import { Injectable } from '@nestjs/common';
import type { McpServersGet, McpServersList, McpServersSync, ReplyOf, RequestOf } from '@toolplane/contracts';
import { SyncService } from '../sync/sync.service';
import { ServerSteps } from './server-steps';
import { toWireServer } from './server.mapper';
import { ServersRepository } from '../store/servers.repository';

/** mcp.servers.get, .list and .sync (a manual resync). */
@Injectable()
export class ServerQueries {
  constructor(
    private readonly records: ServerSteps,
    private readonly servers: ServersRepository,
    private readonly sync: SyncService,
  ) {}

  async get(req: RequestOf<typeof McpServersGet>): Promise<ReplyOf<typeof McpServersGet>> {
    return { server: toWireServer(await this.records.find(req)) };
  }

  async list(req: RequestOf<typeof McpServersList>): Promise<ReplyOf<typeof McpServersList>> {
    return { servers: (await this.servers.listByOrg(req.org_id)).map(toWireServer) };
  }

  async syncNow(req: RequestOf<typeof McpServersSync>): Promise<ReplyOf<typeof McpServersSync>> {
    const { server, report } = await this.sync.sync(await this.records.find(req), 'manual');
    return { server: toWireServer(server), sync: report };
  }
}
