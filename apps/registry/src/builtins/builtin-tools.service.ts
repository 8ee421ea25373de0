import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { BUILTIN_TOOL_TYPES, ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { EventOutbox } from '../events/event-outbox';
import { toolEvent } from '../events/tool-events';
import type { ToolEntity } from '../catalog/tool.entity';
import { BUILTIN_SCHEMA_VERSION, BUILTIN_TOOLS, builtinRow } from './builtin-tools';
import { BuiltinToolsRepository } from './builtin-tools.repository';

/** Orgs remembered as ensured at most (then the memory starts again: ensuring is idempotent). */
const MAX_REMEMBERED_ORGS = 100_000;
/** Wait before the start-up upgrade tries again after a failure (e.g. Postgres not reachable yet). */
const UPGRADE_RETRY_MS = 30_000;

/**
 * The built-in tools of every org. Orgs are not enumerable here (they come with their tokens), so
 * an org's built-ins are made on its first registry request in this replica (one INSERT … ON
 * CONFLICT, a no-op when they are there at this version), with deterministic ids; at start-up
 * every org's older rows are raised to this version. Both write only upwards, so a rolling deploy
 * with two versions of the registry side by side converges on the newer one.
 *
 * Why rows per org, not one global row: agent tool sets reference (org_id, tool_id) with a foreign
 * key, and every read of the registry is scoped to the org; a row per org keeps both as they are.
 */
@Injectable()
export class BuiltinToolsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(BuiltinToolsService.name);
  private readonly ensured = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly repo: BuiltinToolsRepository,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * Raises every org's built-ins to this version before serving (idempotent across replicas: only
   * older rows move). A failure does not stop the registry: it tries again in the background, and
   * meanwhile each org's rows are raised by its first ensure anyway.
   */
  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.upgradeAll();
    } catch (e) {
      this.log.warn(
        `raising built-ins to version ${BUILTIN_SCHEMA_VERSION} failed (${(e as Error).message}); trying again in ${UPGRADE_RETRY_MS} ms`,
      );
      this.scheduleRetry();
    }
  }

  onModuleDestroy(): void {
    clearTimeout(this.retry);
  }

  private scheduleRetry(): void {
    this.retry = setTimeout(() => {
      this.upgradeAll().catch((e: Error) => {
        this.log.warn(`raising built-ins failed again (${e.message})`);
        this.scheduleRetry();
      });
    }, UPGRADE_RETRY_MS);
    this.retry.unref();
  }

  private async upgradeAll(): Promise<void> {
    const orgs = new Set<string>();
    for (const t of BUILTIN_TOOLS) {
      const updated = await this.repo.upgradeAll(builtinRow(t), (rows, m) =>
        this.outbox.stage(
          m,
          rows.map((r) => toolEvent('updated', r)),
        ),
      );
      for (const r of updated) orgs.add(r.orgId);
      if (updated.length)
        this.log.log(`built-in ${t.name} raised to version ${BUILTIN_SCHEMA_VERSION} in ${updated.length} org(s)`);
    }
    // The relay publishes anything left; draining here only makes it sooner.
    for (const org of orgs) await this.outbox.drain(org).catch(() => undefined);
  }

  /** The org's built-ins exist at this version (at most one write per org and replica). */
  ensure(orgId: string): Promise<void> {
    if (this.ensured.has(orgId)) return Promise.resolve();
    let running = this.inFlight.get(orgId);
    if (!running) {
      running = this.ensureNow(orgId).finally(() => this.inFlight.delete(orgId));
      this.inFlight.set(orgId, running);
    }
    return running;
  }

  private async ensureNow(orgId: string): Promise<void> {
    // A row made here is no change anyone made (built-ins exist in every org): no event. A row
    // raised to this version is: caches of the old one must go.
    const { written, shadowed } = await this.repo.ensureOrg(orgId, BUILTIN_TOOLS, (rows, m) =>
      this.outbox.stage(
        m,
        rows.filter((r) => !r.created).map((r) => toolEvent('updated', r.tool)),
      ),
    );
    if (written) {
      await this.outbox.drain(orgId);
      this.log.log(`wrote ${written} built-in tool(s) (version ${BUILTIN_SCHEMA_VERSION}) in org ${orgId}`);
    }
    if (shadowed.length)
      this.log.warn(`org ${orgId} has its own tool(s) named like built-ins, left as they are: ${shadowed.join(', ')}`);
    if (this.ensured.size >= MAX_REMEMBERED_ORGS) this.ensured.clear();
    this.ensured.add(orgId);
  }
}

/** Tenants use built-ins, never write them. */
export function refuseBuiltin(tool: ToolEntity, verb: 'update' | 'delete'): void {
  if (BUILTIN_TOOL_TYPES.has(tool.toolType)) {
    throw new ToolplaneError(
      ErrorCode.TOOL_READ_ONLY,
      `${tool.name} is a built-in tool (${tool.toolType}): it cannot be ${verb === 'update' ? 'updated' : 'deleted'}; register your own tool under another name`,
      {
        tool: tool.name,
        tool_id: tool.id,
        tool_type: tool.toolType,
      },
    );
  }
}
