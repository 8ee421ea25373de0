import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  BUILTIN_TOOL_TYPES,
  DEFAULT_RETURN_CHAR_LIMIT,
  ErrorCode,
  SchemasGenerate,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type ToolsDelete,
  type ToolsGet,
  type ToolsList,
  type ToolsUpsert,
  type ToolUpsertInput,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { ToolSetChanges } from '../agents/tool-set-changes.service';
import { BuiltinToolsService, refuseBuiltin } from '../builtins/builtin-tools.service';
import { EventOutbox } from '../events/event-outbox';
import { toolEvent } from '../events/tool-events';
import type { RegistryConfig } from '../registry.config';
import { decodeCursor, encodeCursor } from '../catalog/page-cursor';
import type { ToolEntity } from '../catalog/tool.entity';
import { toWireTool } from '../catalog/tool.mapper';
import { ToolsRepository, type ToolFields } from './tools.repository';

@Injectable()
export class ToolsService {
  private readonly log = new Logger(ToolsService.name);

  constructor(
    private readonly tools: ToolsRepository,
    private readonly messaging: MessagingClient,
    private readonly outbox: EventOutbox,
    private readonly toolSets: ToolSetChanges,
    private readonly builtins: BuiltinToolsService,
    @Inject(APP_CONFIG) private readonly config: RegistryConfig,
  ) {}

  async upsert(req: RequestOf<typeof ToolsUpsert>): Promise<ReplyOf<typeof ToolsUpsert>> {
    await this.builtins.ensure(req.org_id);
    const input = req.tool;
    // A client-side tool is registered with its json_schema and no source (the contract checks both).
    const client = input.tool_type === 'client';
    const jsonSchema = input.json_schema ?? (await this.deriveSchema(req.org_id, input));
    const name = input.name ?? (typeof jsonSchema.name === 'string' ? jsonSchema.name : undefined);
    if (!name) {
      throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'tool.name is required when json_schema has no name', {
        issues: [{ path: 'tool.name', message: 'required' }],
      });
    }
    const described = input.description ?? (typeof jsonSchema.description === 'string' ? jsonSchema.description : null);
    const always: ToolFields = {
      toolType: client ? 'client' : 'custom',
      sourceCode: client ? null : input.source_code!,
      sourceType: client ? null : input.source_type,
      jsonSchema,
      description: described,
    };
    const given: ToolFields = stripUndefined({
      argsJsonSchema: input.args_json_schema,
      tags: input.tags,
      returnCharLimit: input.return_char_limit,
      pipRequirements: input.pip_requirements,
      npmRequirements: input.npm_requirements,
      defaultRequiresApproval: input.default_requires_approval,
      enableParallelExecution: input.enable_parallel_execution,
      metadata: input.metadata_,
      projectId: input.project_id,
    });
    const onCreate: ToolFields = {
      tags: [],
      returnCharLimit: DEFAULT_RETURN_CHAR_LIMIT,
      enableParallelExecution: false,
      ...given,
      ...always,
    };
    const { tool, created } = await this.tools.upsertByName(
      req.org_id,
      name,
      onCreate,
      { ...given, ...always },
      (t, isNew, m) => this.outbox.stage(m, [toolEvent(isNew ? 'created' : 'updated', t)]),
      refuseExternal,
    );
    if (!created) this.toolSets.toolsChanged(req.org_id);
    await this.outbox.drain(req.org_id);
    this.log.log(`${created ? 'created' : 'updated'} tool ${tool.id} (${tool.name}) in org ${req.org_id}`);
    return { tool: toWireTool(tool) };
  }

  async get(req: RequestOf<typeof ToolsGet>): Promise<ReplyOf<typeof ToolsGet>> {
    await this.builtins.ensure(req.org_id);
    const tool = req.id
      ? await this.tools.findById(req.org_id, req.id)
      : await this.tools.findByName(req.org_id, req.name!);
    if (!tool) throw notFound(req.id ?? req.name!);
    return { tool: toWireTool(tool) };
  }

  async list(req: RequestOf<typeof ToolsList>): Promise<ReplyOf<typeof ToolsList>> {
    await this.builtins.ensure(req.org_id);
    const afterSeq = req.cursor ? decodeCursor(req.cursor) : undefined;
    // Built-ins are listed when tool_types asks for them; otherwise the list is what the org registered.
    const excludeToolTypes = req.tool_types?.length ? undefined : [...BUILTIN_TOOL_TYPES];
    const rows = await this.tools.list(req.org_id, {
      tags: req.tags,
      toolTypes: req.tool_types,
      excludeToolTypes,
      afterSeq,
      limit: req.limit + 1,
    });
    const page = rows.slice(0, req.limit);
    const next = rows.length > req.limit ? encodeCursor(page[page.length - 1]!.seq) : null;
    return { tools: page.map(toWireTool), next_cursor: next };
  }

  async delete(req: RequestOf<typeof ToolsDelete>): Promise<ReplyOf<typeof ToolsDelete>> {
    await this.builtins.ensure(req.org_id);
    let detached = 0;
    const deleted = await this.tools.deleteById(req.org_id, req.id, async (t, m) => {
      refuseBuiltin(t, 'delete');
      detached = (await this.toolSets.detachRemoved(m, req.org_id, [t.id], 'tool_deleted')).length;
      await this.outbox.stage(m, [toolEvent('deleted', t)]);
    });
    if (!deleted) throw notFound(req.id);
    this.toolSets.toolsChanged(req.org_id);
    await this.outbox.drain(req.org_id);
    this.log.log(
      `deleted tool ${deleted.id} (${deleted.name}) in org ${req.org_id}, detached from ${detached} agent(s)`,
    );
    return { deleted: true };
  }

  private async deriveSchema(orgId: string, input: ToolUpsertInput): Promise<Record<string, unknown>> {
    const reply = await this.messaging.request(
      SchemasGenerate,
      {
        // The org takes its turn at the schema workers like its own requests would.
        org_id: orgId,
        source_code: input.source_code!,
        source_type: input.source_type,
        ...(input.name ? { name: input.name } : {}),
        ...(input.args_json_schema ? { args_json_schema: input.args_json_schema } : {}),
      },
      { timeoutMs: this.config.SCHEMA_REQUEST_TIMEOUT_MS },
    );
    return reply.json_schema;
  }
}

/** A custom upsert never overwrites a built-in, nor a tool an external source (an MCP server) owns. */
function refuseExternal(existing: ToolEntity): void {
  refuseBuiltin(existing, 'update');
  if (existing.toolType.startsWith('external_')) {
    throw new ToolplaneError(
      ErrorCode.TOOL_NAME_CONFLICT,
      `The org's tool ${existing.name} is a ${existing.toolType} tool owned by an external source; choose another name (or remove or prefix the source)`,
      { tool: existing.name, tool_id: existing.id, tool_type: existing.toolType },
    );
  }
}

function notFound(ref: string): ToolplaneError {
  return new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, `No tool ${ref} in this org`, { tool: ref });
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
