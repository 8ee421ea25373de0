import { z } from 'zod';
import { JsonObject, MAX_SOURCE_BYTES, OrgId, ToolName } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { NpmRequirement, PipRequirement, SourceType, Tool, ToolId, ToolType } from './tool';

export const ToolUpsertInput = z.strictObject({
  /**
   * custom (default): `source_code` runs in a sandbox. client: a client-side tool, registered with
   * its `json_schema` (named) and no source; the agent runtime runs it and reports the outcome.
   */
  tool_type: z.enum(['custom', 'client']).optional(),
  /** Required for custom tools; a client tool has none. */
  source_code: z.string().min(1).max(MAX_SOURCE_BYTES).optional(),
  source_type: SourceType.default('python'),
  name: ToolName.optional(),
  description: z.string().max(16_384).optional(),
  tags: z.array(z.string().min(1).max(128)).max(64).optional(),
  json_schema: JsonObject.optional(),
  args_json_schema: JsonObject.optional(),
  pip_requirements: z.array(PipRequirement).max(256).optional(),
  npm_requirements: z.array(NpmRequirement).max(256).optional(),
  return_char_limit: z.number().int().min(1).max(1_000_000).optional(),
  default_requires_approval: z.boolean().optional(),
  enable_parallel_execution: z.boolean().optional(),
  metadata_: JsonObject.optional(),
  project_id: z.string().max(128).optional(),
});
export type ToolUpsertInput = z.infer<typeof ToolUpsertInput>;

export const ToolsUpsert = defineRequest({
  subject: 'toolplane.v1.tools.upsert',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: 'Create a tool, or update the tool of the same name in the org (same id).',
  request: z.strictObject({ org_id: OrgId, tool: ToolUpsertInput }).superRefine((r, ctx) => {
    const t = r.tool;
    if (t.tool_type === 'client') {
      if (t.source_code !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['tool', 'source_code'],
          message: 'a client tool has no source: the agent runtime runs it',
        });
      if (!t.json_schema)
        ctx.addIssue({
          code: 'custom',
          path: ['tool', 'json_schema'],
          message: 'a client tool is registered with its json_schema',
        });
    } else if (t.source_code === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['tool', 'source_code'],
        message: 'required (a tool without source is tool_type "client")',
      });
    }
  }),
  reply: z.object({ tool: Tool }),
});

export const ToolsGet = defineRequest({
  subject: 'toolplane.v1.tools.get',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary: 'One tool of the org, by id or by name.',
  request: z
    .strictObject({ org_id: OrgId, id: ToolId.optional(), name: z.string().min(1).max(64).optional() })
    .refine((r) => (r.id === undefined) !== (r.name === undefined), { message: 'give exactly one of id or name' }),
  reply: z.object({ tool: Tool }),
});

export const ToolsList = defineRequest({
  subject: 'toolplane.v1.tools.list',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary: "The org's tools, newest last, filtered by tags (any) and tool types, a page at a time.",
  request: z.strictObject({
    org_id: OrgId,
    tags: z.array(z.string().min(1)).max(64).optional(),
    tool_types: z.array(ToolType).max(16).optional(),
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ tools: z.array(Tool), next_cursor: z.string().nullable() }),
});

export const ToolsDelete = defineRequest({
  subject: 'toolplane.v1.tools.delete',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: 'Delete a tool of the org.',
  request: z.strictObject({ org_id: OrgId, id: ToolId }),
  reply: z.object({ deleted: z.literal(true) }),
});

const ToolEventPayload = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  tool_id: ToolId,
  tool_name: z.string().nullable(),
});
export type ToolEventPayload = z.infer<typeof ToolEventPayload>;

export const ToolCreated = defineEvent({
  subject: 'toolplane.v1.events.tool.created',
  publishedBy: ['registry'],
  summary: 'A tool was created.',
  payload: ToolEventPayload.extend({ tool: Tool }),
});
export const ToolUpdated = defineEvent({
  subject: 'toolplane.v1.events.tool.updated',
  publishedBy: ['registry'],
  summary: 'A tool was updated (upsert of an existing name).',
  payload: ToolEventPayload.extend({ tool: Tool }),
});
export const ToolDeleted = defineEvent({
  subject: 'toolplane.v1.events.tool.deleted',
  publishedBy: ['registry'],
  summary: 'A tool was deleted.',
  payload: ToolEventPayload,
});

/** The JetStream stream that keeps every toolplane.v1.events.> message. */
export const EVENTS_STREAM = 'TOOLPLANE_EVENTS';
export const EVENTS_SUBJECTS = 'toolplane.v1.events.>';
/** Every public request subject (what an agent runtime may publish, events excepted). */
export const PUBLIC_SUBJECTS = 'toolplane.v1.>';
/** Every internal core-NATS broadcast between services (hints: credentials.changed, auth.changed). */
export const INTERNAL_EVENTS_SUBJECTS = 'toolplane.internal.v1.events.>';
/** Every tool event (created, updated, deleted), for consumers that read them by descriptor. */
export const TOOL_EVENTS = [ToolCreated, ToolUpdated, ToolDeleted] as const;
