import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ExternalToolsSync, McpServerSynced, ToolplaneError, type McpSyncReport } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import { ConnectionPool, type ServerTarget } from '../connections/connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { LastSync, McpServerEntity } from '../servers/mcp-server.entity';
import { ServerTargets } from '../servers/server-targets';
import { ServersRepository } from '../servers/servers.repository';
import { discoverTools, type Discovery } from './tool-discovery';
import { mapTools, type ServerRef } from './tool-mapper';

export type SyncTrigger = LastSync['trigger'];
export interface SyncOutcome {
  server: McpServerEntity;
  report: McpSyncReport;
}

const tracer = trace.getTracer('mcp-sync');

/**
 * Discovery (every page, each tool checked on its own) → normalization → one atomic write of the
 * server's full tool set to the registry → the report, recorded on the server and published as
 * an event. Syncs of one server never overlap in this process.
 */
@Injectable()
export class SyncService {
  private readonly log = new Logger(SyncService.name);
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly servers: ServersRepository,
    private readonly targets: ServerTargets,
    private readonly pool: ConnectionPool,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  /**
   * Connects (bounded) and lists every page of the server's tools. Throws when nothing could be
   * listed. `attempts`: connection attempts (1 when adding a server: fail fast, store nothing).
   */
  discover(target: ServerTarget, attempts = 2): Promise<Discovery> {
    return tracer.startActiveSpan('mcp discover tools', async (span) => {
      try {
        span.setAttributes({ 'toolplane.mcp.server': target.name, 'toolplane.mcp.transport': target.transport });
        const deadline = Date.now() + this.config.MCP_CONNECT_TIMEOUT_MS + this.config.MCP_INITIALIZE_TIMEOUT_MS + 1000;
        const limits = { pageTimeoutMs: this.config.MCP_LIST_TIMEOUT_MS, maxPages: this.config.MCP_LIST_MAX_PAGES, maxTools: this.config.MCP_MAX_TOOLS_PER_SERVER };
        const d = await this.pool.withConnection(target, deadline, (c) => discoverTools(c.client, limits), attempts);
        span.setAttributes({ 'toolplane.mcp.tools': d.tools.length, 'toolplane.mcp.pages': d.pages });
        return d;
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
        throw e;
      } finally {
        span.end();
      }
    });
  }

  /** Syncs now, after any sync of the same server already running here. */
  sync(server: McpServerEntity, trigger: SyncTrigger): Promise<SyncOutcome> {
    const prev = this.chains.get(server.id) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => this.syncNow(server.id, server.orgId, trigger));
    this.chains.set(server.id, next);
    void next.catch(() => undefined).finally(() => {
      if (this.chains.get(server.id) === next) this.chains.delete(server.id);
    });
    return next;
  }

  /** Writes an already-made discovery (servers.add discovers before it stores anything). */
  async apply(server: McpServerEntity, discovery: Discovery, trigger: SyncTrigger, started: number): Promise<SyncOutcome> {
    const ref: ServerRef = { id: server.id, name: server.name, toolPrefix: server.toolPrefix };
    const { mapped, errors: mapErrors } = mapTools(ref, discovery.tools);
    const reply = await this.messaging.request(
      ExternalToolsSync,
      { org_id: server.orgId, tool_type: 'external_mcp', source_id: server.id, tools: mapped.map((m) => m.input), complete: discovery.complete },
      { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS },
    );
    const collided = new Set(reply.collisions.map((c) => c.name));
    const kept = mapped.filter((m) => !collided.has(m.input.name));
    const invalid = kept.filter((m) => m.health === 'INVALID');
    const report: McpSyncReport = {
      added: reply.added.length,
      updated: reply.updated.length,
      removed: reply.removed.length,
      unchanged: reply.unchanged,
      invalid: invalid.length,
      listed: discovery.listed,
      pages: discovery.pages,
      errors: [
        ...discovery.errors,
        ...mapErrors,
        ...reply.collisions.map((c) => ({
          code: 'TOOL_NAME_COLLISION',
          tool: c.name,
          message: `${c.name} was not synced: ${c.reason} (${c.existing_tool_id}); set a tool_prefix on the server to namespace its tools`,
        })),
      ],
      invalid_tools: invalid.map((m) => ({ name: m.input.name, reasons: m.reasons })),
      complete: discovery.complete,
      duration_ms: Math.round(performance.now() - started),
    };
    const toolCount = discovery.complete ? kept.length : server.toolCount + reply.added.length;
    const recorded = await this.servers.recordSync(server.id, { at: new Date().toISOString(), trigger, ok: true, report, error: null }, toolCount);
    await this.publish(server, trigger, true, report, null);
    this.log.log(
      `synced ${server.name} (${server.id}, ${trigger}): listed ${report.listed} in ${report.pages} page(s), +${report.added} ~${report.updated} -${report.removed} =${report.unchanged}, invalid ${report.invalid}, errors ${report.errors.length}, ${report.duration_ms} ms`,
    );
    return { server: recorded ?? server, report };
  }

  private async syncNow(id: string, orgId: string, trigger: SyncTrigger): Promise<SyncOutcome> {
    const server = await this.servers.findById(orgId, id);
    if (!server) throw new Error(`server ${id} is gone`);
    const started = performance.now();
    let discovery: Discovery;
    try {
      discovery = await this.discover(this.targets.of(server));
    } catch (e) {
      const message = e instanceof ToolplaneError ? e.message : 'Internal error';
      await this.servers.recordSync(server.id, { at: new Date().toISOString(), trigger, ok: false, report: null, error: message });
      await this.publish(server, trigger, false, null, message).catch(() => undefined);
      this.log.warn(`sync of ${server.name} (${server.id}, ${trigger}) failed: ${message}`);
      throw e;
    }
    return this.apply(server, discovery, trigger, started);
  }

  private publish(server: McpServerEntity, trigger: SyncTrigger, ok: boolean, report: McpSyncReport | null, error: string | null): Promise<void> {
    const eventId = randomUUID();
    return this.messaging.publish(
      McpServerSynced,
      { event_id: eventId, occurred_at: new Date().toISOString(), org_id: server.orgId, server_id: server.id, server_name: server.name, trigger, ok, report, error },
      eventId,
    );
  }
}
