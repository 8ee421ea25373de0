import { z } from 'zod';
import { AgentTool } from './agents.contract';
import { OrgId } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { ToolId } from './tool';

/**
 * Published tool sets ("toolsets"): named sets of an org's tools that the MCP gateway serves at
 * `/mcp/toolsets/<name>`. Membership is live: a tool belongs to a set when its id is listed, its
 * name is listed, or it carries one of the listed tags, so a tool made later with a matching tag
 * is in the set and a deleted tool leaves it. The registry owns them.
 */

/** Entries of each of tool_ids, tool_names and tags in one set. */
export const MAX_TOOLSET_REFS = 200;

export const TOOLSET_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** A set's name: the last segment of its MCP URL. */
export const ToolsetName = z
  .string()
  .regex(TOOLSET_NAME, 'a toolset name: 1-64 of a-z 0-9 _ -, starting with a letter or digit');
/** A name as reads and deletes take it: any name that is not a set's is simply not found. */
const ToolsetRef = z.string().min(1).max(64);
export const ToolsetId = z
  .string()
  .regex(/^toolset-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'an id like toolset-<uuid>');

export const ToolsetInput = z
  .strictObject({
    name: ToolsetName,
    description: z.string().max(4096).nullable().optional(),
    /** Shown to MCP clients as the server's instructions. */
    instructions: z.string().max(16_384).nullable().optional(),
    tool_ids: z.array(ToolId).max(MAX_TOOLSET_REFS).optional(),
    tool_names: z.array(z.string().min(1).max(256)).max(MAX_TOOLSET_REFS).optional(),
    tags: z.array(z.string().min(1).max(128)).max(MAX_TOOLSET_REFS).optional(),
    /** null or absent: each tool's default_requires_approval applies; true/false overrides it for calls made through this set. */
    requires_approval: z.boolean().nullable().optional(),
  })
  .refine((t) => Boolean(t.tool_ids?.length || t.tool_names?.length || t.tags?.length), {
    message: 'give at least one of tool_ids, tool_names or tags',
  });
export type ToolsetInput = z.infer<typeof ToolsetInput>;

/** A toolset on the wire: every field present (null when not set). */
export const Toolset = z.object({
  id: ToolsetId,
  org_id: OrgId,
  name: z.string(),
  description: z.string().nullable(),
  instructions: z.string().nullable(),
  tool_ids: z.array(ToolId),
  tool_names: z.array(z.string()),
  tags: z.array(z.string()),
  requires_approval: z.boolean().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Toolset = z.infer<typeof Toolset>;

/** A member of a set: the AgentTool shape without the attachment fields, so both lists read alike. */
export const ToolsetTool = AgentTool.pick({ tool: true, requires_approval: true }).describe(
  "requires_approval: the set's requires_approval when not null, else the tool's default_requires_approval, else false.",
);
export type ToolsetTool = z.infer<typeof ToolsetTool>;

export const ToolsetsUpsert = defineRequest({
  subject: 'toolplane.v1.toolsets.upsert',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: `Create a toolset, or replace the whole definition of the org's toolset of that name (same id). Every listed tool id and name must be a tool of the org (TOOL_NOT_FOUND names the unknown ones, and nothing is stored); at most ${MAX_TOOLSET_REFS} each of tool_ids, tool_names and tags, at least one entry in all. Upserting the same definition again changes nothing.`,
  request: z.strictObject({ org_id: OrgId, toolset: ToolsetInput }),
  reply: z.object({ toolset: Toolset, created: z.boolean() }),
});

export const ToolsetsGet = defineRequest({
  subject: 'toolplane.v1.toolsets.get',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary: 'One toolset of the org, by name (TOOLSET_NOT_FOUND when there is none).',
  request: z.strictObject({ org_id: OrgId, name: ToolsetRef }),
  reply: z.object({ toolset: Toolset }),
});

export const ToolsetsList = defineRequest({
  subject: 'toolplane.v1.toolsets.list',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary: "The org's toolsets, oldest first, a page at a time.",
  request: z.strictObject({
    org_id: OrgId,
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ toolsets: z.array(Toolset), next_cursor: z.string().nullable() }),
});

export const ToolsetsDelete = defineRequest({
  subject: 'toolplane.v1.toolsets.delete',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: 'Delete a toolset of the org (its tools stay); deleted is false when the org has no toolset of that name.',
  request: z.strictObject({ org_id: OrgId, name: ToolsetRef }),
  reply: z.object({ deleted: z.boolean() }),
});

export const ToolsetsToolsList = defineRequest({
  subject: 'toolplane.v1.toolsets.tools.list',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary:
    "A toolset's tools as they are now (listed by id, by name, or carrying one of its tags), each with whether calls through the set need approval, ordered by tool name then id, a page at a time (TOOLSET_NOT_FOUND when there is no such set).",
  request: z.strictObject({
    org_id: OrgId,
    name: ToolsetRef,
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ tools: z.array(ToolsetTool), next_cursor: z.string().nullable() }),
});

const ToolsetEventPayload = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  toolset_id: ToolsetId,
  name: z.string(),
});

export const ToolsetUpserted = defineEvent({
  subject: 'toolplane.v1.events.toolset.upserted',
  publishedBy: ['registry'],
  summary: 'A toolset was created or its definition changed (an upsert that changed nothing publishes none).',
  payload: ToolsetEventPayload.extend({ toolset: Toolset }),
});

export const ToolsetDeleted = defineEvent({
  subject: 'toolplane.v1.events.toolset.deleted',
  publishedBy: ['registry'],
  summary: 'A toolset was deleted.',
  payload: ToolsetEventPayload,
});

/** Every toolset event, for consumers that read them by descriptor (e.g. the MCP gateway dropping a cached set). */
export const TOOLSET_EVENTS = [ToolsetUpserted, ToolsetDeleted] as const;
