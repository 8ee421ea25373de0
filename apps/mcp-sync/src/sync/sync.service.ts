import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import {
  DEPENDENCY_DOWN_CODES,
  ErrorCode,
  ExternalToolsStage,
  ExternalToolsSync,
  McpServerSynced,
  ToolplaneError,
  type ExternalToolInput,
  type McpSyncReport,
  type ReplyOf,
  type RequestIn,
  McpSyncErrorCode,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import { ConnectionPool, type ServerTarget } from '../connections/connection-pool';
import type { McpSyncConfig } from '../mcp-sync.config';
import type { LastSync, McpServerEntity } from '../store/mcp-server.entity';
import { TargetBuilder } from '../connections/target-builder';
import { ServersRepository } from '../store/servers.repository';
import { SyncProgress } from './sync-progress';
import { discoverTools, type Discovery } from './tool-discovery';
import { mapTools, type ToolOrigin } from './tool-mapper';
import { planToolSet } from './tool-pages';

export type SyncTrigger = LastSync['trigger'];
export interface SyncOutcome {
  server: McpServerEntity;
  report: McpSyncReport;
}

const tracer = trace.getTracer('mcp-sync');
/** Pages staged at once. */
const STAGE_CONCURRENCY = 4;
/** Room left under the server's max_payload for the request's headers (trace context, deadline). */
const HEADER_ROOM = 4096;

/**
 * Discovery (every page, each tool checked on its own) → normalization → one atomic write of the
 * server's full tool set to the registry (a set larger than MCP_SYNC_MESSAGE_BYTES is staged page
 * by page first, then applied by one sync message) → the report, recorded on the server and
 * published as an event. Syncs of one server never overlap in this process.
 */
@Injectable()
export class SyncService {
  private readonly log = new Logger(SyncService.name);
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly servers: ServersRepository,
    private readonly targets: TargetBuilder,
    private readonly pool: ConnectionPool,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  /**
   * Connects (bounded) and lists every page of the server's tools. Throws when nothing could be
   * listed. `attempts`: connection attempts (1 when adding a server: fail fast, store nothing).
   * `progress` is told of every page.
   */
  discover(target: ServerTarget, attempts = 2, progress?: SyncProgress): Promise<Discovery> {
    return tracer.startActiveSpan('mcp discover tools', async (span) => {
      try {
        span.setAttributes({ 'toolplane.mcp.server': target.name, 'toolplane.mcp.transport': target.transport });
        const deadline = Date.now() + this.config.MCP_CONNECT_TIMEOUT_MS + this.config.MCP_INITIALIZE_TIMEOUT_MS + 1000;
        const limits = {
          pageTimeoutMs: this.config.MCP_LIST_TIMEOUT_MS,
          maxPages: this.config.MCP_LIST_MAX_PAGES,
          maxTools: this.config.MCP_MAX_TOOLS_PER_SERVER,
        };
        const d = await this.pool.withConnection(
          target,
          deadline,
          (c) => discoverTools(c.client, limits, (soFar) => progress?.listed(soFar)),
          attempts,
        );
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
    return this.exclusive(server.id, () => this.syncNow(server.id, server.orgId, trigger));
  }

  /** Runs `fn` after every sync (or other exclusive work) of this server queued here before it. */
  exclusive<T>(serverId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(serverId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.chains.set(serverId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (this.chains.get(serverId) === next) this.chains.delete(serverId);
      });
    return next;
  }

  /**
   * Writes an already-made discovery (servers.add discovers before it stores anything).
   * `onWriteFailure`: told when the registry write fails (refused, unanswered, server removed meanwhile), before the error is thrown.
   */
  async apply(
    server: McpServerEntity,
    discovery: Discovery,
    trigger: SyncTrigger,
    started: number,
    progress: SyncProgress,
    onWriteFailure?: (e: unknown) => Promise<void>,
  ): Promise<SyncOutcome> {
    const ref: ToolOrigin = { id: server.id, name: server.name, toolPrefix: server.toolPrefix };
    const { mapped, errors: mapErrors } = mapTools(ref, discovery.tools);
    const announce = (tools: number, pages: number) =>
      progress.writing(
        { pages: discovery.pages, listed: discovery.listed, errors: discovery.errors.length + mapErrors.length },
        mapped.filter((m) => m.health === 'INVALID').length,
        tools,
        pages,
      );
    let written: Awaited<ReturnType<SyncService['write']>>;
    try {
      written = await this.write(
        server,
        mapped.map((m) => m.input),
        discovery.complete,
        announce,
        () => progress.wrote(),
      );
      await this.undoIfRemoved(server);
    } catch (e) {
      await onWriteFailure?.(e);
      throw e;
    }
    const { reply, withheld, errors: writeErrors } = written;
    const collided = new Set(reply.collisions.map((c) => c.name));
    const kept = mapped.filter((m) => !collided.has(m.input.name) && !withheld.has(m.input.name));
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
        ...writeErrors,
        ...reply.collisions.map((c) => ({
          code: McpSyncErrorCode.TOOL_NAME_COLLISION,
          tool: c.name,
          message: `${c.name} was not synced: ${c.reason} (${c.existing_tool_id}); set a tool_prefix on the server to namespace its tools`,
        })),
      ],
      invalid_tools: invalid.map((m) => ({ name: m.input.name, reasons: m.reasons })),
      detached: reply.detached,
      detachments: reply.detachments,
      complete: discovery.complete,
      duration_ms: Math.round(performance.now() - started),
    };
    const toolCount = discovery.complete ? kept.length + reply.kept : server.toolCount + reply.added.length;
    const recorded = await this.servers.recordSync(
      server.id,
      { at: new Date().toISOString(), trigger, ok: true, report, error: null },
      toolCount,
    );
    await progress.flush();
    await this.publish(server, trigger, true, report, null);
    this.log.log(
      `synced ${server.name} (${server.id}, ${trigger}): listed ${report.listed} in ${report.pages} page(s), +${report.added} ~${report.updated} -${report.removed} =${report.unchanged}, invalid ${report.invalid}, errors ${report.errors.length}, ${report.duration_ms} ms`,
    );
    return { server: recorded ?? server, report };
  }

  /**
   * The registry write: one external-tools.sync when the request fits in MCP_SYNC_MESSAGE_BYTES
   * (and the server's max_payload); else the tools are staged in pages under that size (a few at
   * a time, each bounded by REGISTRY_REQUEST_TIMEOUT_MS) and one sync with `tools: []` applies
   * them all atomically. Tools that fit no message are withheld and named in `keep`.
   */
  /**
   * A removal deletes the server's row before its tools: a sync whose write landed after the
   * removal's (on another replica, say) sees the row gone here and takes its tools out again.
   */
  private async undoIfRemoved(server: McpServerEntity): Promise<void> {
    if (await this.servers.findById(server.orgId, server.id)) return;
    await this.messaging.request(
      ExternalToolsSync,
      { org_id: server.orgId, tool_type: 'external_mcp', source_id: server.id, tools: [], complete: true },
      { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS },
    );
    throw new ToolplaneError(ErrorCode.MCP_SERVER_NOT_FOUND, `MCP server ${server.name} was removed during its sync`, {
      server: server.id,
    });
  }

  private async write(
    server: McpServerEntity,
    tools: ExternalToolInput[],
    complete: boolean,
    announce: (tools: number, pages: number) => void,
    wrote: () => void,
  ) {
    const maxPayload = this.messaging.nc.info?.max_payload ?? 1024 * 1024;
    const budget = Math.min(this.config.MCP_SYNC_MESSAGE_BYTES, maxPayload - HEADER_ROOM);
    const base: RequestIn<typeof ExternalToolsSync> = {
      org_id: server.orgId,
      tool_type: 'external_mcp',
      source_id: server.id,
      tools: [],
      complete,
    };
    const syncId = randomUUID();
    const plan = planToolSet(tools, budget, {
      sync: (keep) => ({ ...base, ...(keep.length ? { keep } : {}), staged: { sync_id: syncId, pages: 10_000 } }),
      stage: { org_id: server.orgId, source_id: server.id, sync_id: syncId, page: 9_999, tools: [] },
    });
    const keep = plan.withheld.length ? { keep: plan.withheld } : {};
    const opts = { timeoutMs: this.config.REGISTRY_REQUEST_TIMEOUT_MS };
    let reply: ReplyOf<typeof ExternalToolsSync>;
    announce(plan.written.length, (plan.pages?.length ?? 0) + 1);
    if (!plan.pages?.length) {
      reply = await this.messaging.request(ExternalToolsSync, { ...base, ...keep, tools: plan.written }, opts);
    } else {
      const pages = plan.pages;
      await tracer.startActiveSpan('mcp stage tools', async (span) => {
        span.setAttributes({
          'toolplane.mcp.server': server.name,
          'toolplane.mcp.tools': plan.written.length,
          'toolplane.mcp.pages': pages.length,
        });
        try {
          await forEachBounded(pages, STAGE_CONCURRENCY, (page, i) =>
            retryOnce(() =>
              this.messaging.request(
                ExternalToolsStage,
                { org_id: server.orgId, source_id: server.id, sync_id: syncId, page: i, tools: page },
                opts,
              ),
            ).then(wrote),
          );
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
          throw e;
        } finally {
          span.end();
        }
      });
      reply = await this.messaging.request(
        ExternalToolsSync,
        { ...base, ...keep, staged: { sync_id: syncId, pages: pages.length } },
        opts,
      );
      this.log.log(
        `wrote ${plan.written.length} tool(s) of ${server.name} (${server.id}) in ${pages.length} staged page(s)`,
      );
    }
    wrote();
    return { reply, withheld: new Set(plan.withheld), errors: plan.errors };
  }

  private async syncNow(id: string, orgId: string, trigger: SyncTrigger): Promise<SyncOutcome> {
    const server = await this.servers.findById(orgId, id);
    if (!server)
      throw new ToolplaneError(
        ErrorCode.MCP_SERVER_NOT_FOUND,
        `MCP server ${id} is gone (removed before its sync started)`,
        { server: id },
      );
    const started = performance.now();
    const progress = new SyncProgress(this.messaging, server, trigger);
    const failed = (e: unknown) => this.recordFailure(server, trigger, progress, e);
    let discovery: Discovery;
    try {
      discovery = await this.discover(await this.targets.of(server), 2, progress);
    } catch (e) {
      await failed(e);
      throw e;
    }
    // Once the write is in, the sync stands: a failure after it (say, publishing the event) is not recorded as a failed sync.
    return this.apply(server, discovery, trigger, started, progress, failed);
  }

  /**
   * A sync that failed — the server could not be listed, or the registry refused or did not take
   * the write — is recorded on the server (`last_sync`) and published, with a typed error's
   * message only. A server removed during its sync has no row to record on.
   */
  private async recordFailure(
    server: McpServerEntity,
    trigger: SyncTrigger,
    progress: SyncProgress,
    e: unknown,
  ): Promise<void> {
    if (e instanceof ToolplaneError && e.code === ErrorCode.MCP_SERVER_NOT_FOUND) return;
    const message = e instanceof ToolplaneError ? e.message : 'Internal error';
    await this.servers
      .recordSync(server.id, { at: new Date().toISOString(), trigger, ok: false, report: null, error: message })
      .catch(() => undefined);
    await progress.flush();
    await this.publish(server, trigger, false, null, message).catch(() => undefined);
    this.log.warn(`sync of ${server.name} (${server.id}, ${trigger}) failed: ${message}`);
  }

  private publish(
    server: McpServerEntity,
    trigger: SyncTrigger,
    ok: boolean,
    report: McpSyncReport | null,
    error: string | null,
  ): Promise<void> {
    const eventId = randomUUID();
    return this.messaging.publish(
      McpServerSynced,
      {
        event_id: eventId,
        occurred_at: new Date().toISOString(),
        org_id: server.orgId,
        server_id: server.id,
        server_name: server.name,
        trigger,
        ok,
        report,
        error,
      },
      eventId,
    );
  }
}

/** Runs `fn` over `items`, at most `limit` at once; the first failure rejects (the rest still settle). */
async function forEachBounded<T>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failed: { error: unknown } | undefined;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (!failed && next < items.length) {
        const i = next++;
        try {
          await fn(items[i]!, i);
        } catch (error) {
          failed ??= { error };
        }
      }
    }),
  );
  if (failed) throw failed.error;
}

/** Staging a page is idempotent (a page is replaced): one more attempt when the registry did not answer. */
async function retryOnce<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ToolplaneError && DEPENDENCY_DOWN_CODES.has(e.code)) return fn();
    throw e;
  }
}
