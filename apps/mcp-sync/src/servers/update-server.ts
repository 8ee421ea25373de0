import { Injectable } from '@nestjs/common';
import { McpServerInput, type McpServersUpdate, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { parseContract } from '@toolplane/messaging';
import { ConnectionPool } from '../connections/connection-pool';
import { SyncService } from '../sync/sync.service';
import { ServerCache } from '../connections/server-cache';
import { secretsOf, ServerSteps, stripUndefined } from './server-steps';
import { toWireServer } from './server.mapper';
import { TargetBuilder } from '../connections/target-builder';
import { ServersRepository } from '../store/servers.repository';

/** mcp.servers.update: the merged settings checked, stored, cached copies and sessions dropped, then a resync. */
@Injectable()
export class UpdateServer {
  constructor(
    private readonly records: ServerSteps,
    private readonly servers: ServersRepository,
    private readonly targets: TargetBuilder,
    private readonly cache: ServerCache,
    private readonly pool: ConnectionPool,
    private readonly sync: SyncService,
  ) {}

  /** Fields given replace the stored ones; the merged settings must form a valid server. Then a resync. */
  async update(req: RequestOf<typeof McpServersUpdate>): Promise<ReplyOf<typeof McpServersUpdate>> {
    const current = await this.records.find(req);
    const old = await this.targets.of(current);
    const patch = req.server;
    const transport = patch.transport ?? current.transport;
    const switched = transport !== current.transport;
    const merged = parseContract(
      McpServerInput,
      stripUndefined({
        name: current.name,
        transport,
        command: patch.command ?? (switched ? undefined : (current.command ?? undefined)),
        args: patch.args ?? (switched ? undefined : current.args),
        env: patch.env ?? old.secrets.env,
        url: patch.url ?? (switched ? undefined : (current.url ?? undefined)),
        headers: patch.headers ?? old.secrets.headers,
        auth: patch.auth ?? old.secrets.auth,
        tool_prefix: patch.tool_prefix ?? current.toolPrefix ?? undefined,
      }),
      'The updated server',
    );
    await this.records.checkReachable(merged);
    // New OAuth settings or a new URL: what was learned and the tokens obtained under the old ones are not reused.
    const oauthKept =
      old.secrets.auth?.type === 'oauth' &&
      JSON.stringify(old.secrets.auth) === JSON.stringify(merged.auth) &&
      (current.url ?? undefined) === merged.url;
    const updated = await this.servers.update(
      current.id,
      await this.records.fields(
        current.orgId,
        current.id,
        merged,
        secretsOf(merged, oauthKept ? old.secrets.oauth : undefined),
      ),
    );
    this.cache.invalidate(current.orgId, current.id);
    await this.pool.drop(current.id);
    if (old.secrets.auth?.type === 'oauth' && !oauthKept) await this.records.forgetTokens(current.orgId, current.id);
    const { server, report } = await this.sync.sync(updated, 'update');
    return { server: toWireServer(server), sync: report };
  }
}
