import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import {
  AgentToolsAttached,
  AgentToolsDetached,
  ToolDeleted,
  ToolUpdated,
  type AgentToolDefinitions,
  type AgentToolsDefinitions,
  type DefinitionFormat,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, HealthRegistry, OrgScopedCache } from '@toolplane/platform';
import { createHash } from 'node:crypto';
import type { RegistryConfig } from '../registry.config';
import { AgentToolsRepository, type DefinitionRow } from './agent-tools.repository';
import { SchemaChecksService } from './schema-checks.service';
import { toDefinitions, type DefinitionSource } from './tool-definition.mapper';

interface Built {
  reply: AgentToolDefinitions;
  /** Made without every schema checked (the schema service did not answer): served once, never kept. */
  degraded: boolean;
}

/** The events that make definitions stale: a tool changed or went (its org), an agent's set changed (that agent). */
const INVALIDATING = [ToolUpdated, ToolDeleted, AgentToolsAttached, AgentToolsDetached] as const;

/**
 * An agent's tool set as one model API's tool definitions, from a per-replica cache.
 *
 * The cache is an OrgScopedCache with the agent as the part: a tool event (updated, deleted) drops
 * the org's sets, an agent-tools event (attached, detached) only that agent's. Every replica
 * listens to both on core NATS; the replica that made a change drops its own sets before it
 * replies (and publishes the events before it replies too), so a request sent after the write's
 * reply, to any replica, finds the change unless its event has not reached that replica yet. A
 * set built while an invalidation arrives is answered but not kept (the version it was built under
 * is gone). Concurrent requests for one missing set share one build. The etag is a hash of the
 * reply: the same set gives the same etag on every replica and after every rebuild.
 */
@Injectable()
export class ToolDefinitionsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ToolDefinitionsService.name);
  private readonly cache: OrgScopedCache<AgentToolDefinitions>;
  private readonly building = new Map<string, Promise<Built>>();
  private readonly stats = { hits: 0, builds: 0, invalidations: 0 };
  private subs: Array<{ unsubscribe(): void }> = [];

  constructor(
    private readonly attachments: AgentToolsRepository,
    private readonly checks: SchemaChecksService,
    private readonly messaging: MessagingClient,
    private readonly health: HealthRegistry,
    @Inject(APP_CONFIG) private readonly config: RegistryConfig,
  ) {
    this.cache = new OrgScopedCache(config.REGISTRY_DEFINITIONS_CACHE_MAX_ENTRIES);
  }

  onModuleInit(): void {
    this.subs = [
      this.messaging.onEvents(
        INVALIDATING,
        (_e, p) => this.forget(p.org_id, 'agent_id' in p ? p.agent_id : undefined),
        { invalid: (e, raw) => this.onInvalid(e.subject, raw) },
      ),
    ];
    this.health.metrics = () => this.metrics();
  }

  onModuleDestroy(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  /** Drops the org's sets (or only the agent's), here and now. */
  forget(orgId: string, agentId?: string): void {
    this.stats.invalidations++;
    this.cache.forget(orgId, agentId);
  }

  async definitions(req: RequestOf<typeof AgentToolsDefinitions>): Promise<ReplyOf<typeof AgentToolsDefinitions>> {
    const key = `${req.agent_id}\u0000${req.format}\u0000${req.strict ? 1 : 0}`;
    const hit = this.cache.get(req.org_id, key);
    let reply: AgentToolDefinitions;
    if (hit) {
      this.stats.hits++;
      reply = hit.value;
    } else {
      const version = this.cache.versionOf(req.org_id, req.agent_id);
      const flight = `${req.org_id}\u0000${key}\u0000${version}`;
      let p = this.building.get(flight);
      if (!p) {
        p = this.build(req.org_id, req.agent_id, req.format, req.strict).finally(() => this.building.delete(flight));
        this.building.set(flight, p);
      }
      const built = await p;
      if (!built.degraded)
        this.cache.set(
          req.org_id,
          key,
          built.reply,
          this.config.REGISTRY_DEFINITIONS_CACHE_TTL_MS,
          version,
          req.agent_id,
        );
      reply = built.reply;
    }
    return req.if_none_match === reply.etag ? { not_modified: true, etag: reply.etag } : reply;
  }

  private async build(orgId: string, agentId: string, format: DefinitionFormat, strict: boolean): Promise<Built> {
    this.stats.builds++;
    const rows = await this.attachments.definitionRows(orgId, agentId);
    const parameters = rows.map(parametersOf);
    const { checks, failure } = await this.checks.checkAll(orgId, parameters);
    const sources: DefinitionSource[] = rows.map((row, i) => {
      const check = checks[i];
      const source: DefinitionSource = {
        toolId: row.tool_id,
        name: row.name,
        description:
          row.description ?? (typeof row.json_schema?.description === 'string' ? row.json_schema.description : null),
        parameters: parameters[i]!,
        health: check?.health ?? 'NON_STRICT_ONLY',
        reasons: check?.reasons ?? [],
        strictParameters: check?.strict ?? null,
        strictReasons: check?.strictReasons ?? [],
        ...(check ? {} : { unchecked: `not checked: the schema service did not answer (${failure ?? 'unknown'})` }),
      };
      return withSourceHealth(source, row);
    });
    const made = toDefinitions(format, strict, sources);
    const body = { format, strict, ...made };
    const etag = createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 32);
    return { reply: { ...body, etag } as AgentToolDefinitions, degraded: failure !== undefined };
  }

  /** A payload of another version (a rolling upgrade) still names its org: drop all of the org's sets rather than keep a stale one. */
  private onInvalid(subject: string, raw: unknown): void {
    const orgId = (raw as { org_id?: unknown } | null)?.org_id;
    this.log.warn(
      `a ${subject} event does not match its contract${typeof orgId === 'string' ? `: dropping every set of org ${orgId}` : ' and names no org: ignored'}`,
    );
    if (typeof orgId === 'string') this.forget(orgId);
  }

  private metrics(): string {
    const line = (name: string, help: string, value: number) =>
      `# HELP ${name} ${help}\n# TYPE ${name} counter\n${name} ${value}\n`;
    return [
      line(
        'toolplane_registry_definitions_cache_hits_total',
        'Definition requests answered from the cache.',
        this.stats.hits,
      ),
      line('toolplane_registry_definitions_builds_total', 'Definition sets built (cache misses).', this.stats.builds),
      line(
        'toolplane_registry_definitions_invalidations_total',
        'Definition sets dropped (by events or a local change).',
        this.stats.invalidations,
      ),
    ].join('');
  }
}

function parametersOf(row: DefinitionRow): Record<string, unknown> {
  const p = row.json_schema?.parameters;
  return typeof p === 'object' && p !== null && !Array.isArray(p)
    ? (p as Record<string, unknown>)
    : { type: 'object', properties: {} };
}

/** What mcp-sync finds wrong with an MCP tool itself (not its schema): see mcp-sync's tool-mapper. */
const MCP_TOOL_DEFECT = /^(inputSchema|description): /;

/**
 * An MCP tool that mcp-sync stored as INVALID for a defect of the tool itself (no input schema:
 * the registry then holds a placeholder that checks fine) stays INVALID here. Its schema's own
 * reasons are checked again above, and its name is each provider's own rule.
 */
function withSourceHealth(source: DefinitionSource, row: DefinitionRow): DefinitionSource {
  const mcp =
    row.tool_type === 'external_mcp'
      ? (row.metadata?.mcp as { health?: unknown; reasons?: unknown } | undefined)
      : undefined;
  if (mcp?.health !== 'INVALID' || !Array.isArray(mcp.reasons)) return source;
  const defects = mcp.reasons.filter((r): r is string => typeof r === 'string' && MCP_TOOL_DEFECT.test(r));
  return defects.length ? { ...source, health: 'INVALID', reasons: [...defects, ...source.reasons] } : source;
}
