import { z } from 'zod';
import { JsonObject, OrgId } from './common';
import { AgentId } from './credentials.contract';
import { defineEvent, defineRequest } from './descriptor';
import { SchemaHealth } from './schemas.contract';
import { Tool, ToolId } from './tool';

/**
 * Agent tool sets: which of the org's tools an agent may call, with per-agent settings, and the
 * set as model-ready tool definitions. Agent ids are the runtime's own and per org: the same
 * agent_id in two orgs names two agents. The registry owns the attachments.
 */

/** Tools named in one attach or detach. */
export const MAX_TOOLS_PER_REQUEST = 200;
/** A sync report names at most this many of the attachments its removals took away (it counts them all). */
export const MAX_REPORTED_DETACHMENTS = 100;

const ToolRefName = z.string().min(1).max(256);
const ToolRefs = {
  tool_ids: z.array(ToolId).min(1).max(MAX_TOOLS_PER_REQUEST).optional(),
  tool_names: z.array(ToolRefName).min(1).max(MAX_TOOLS_PER_REQUEST).optional(),
};
const oneRefList = (r: { tool_ids?: unknown; tool_names?: unknown }): boolean =>
  (r.tool_ids === undefined) !== (r.tool_names === undefined);
const oneRefListMessage = { message: 'give exactly one of tool_ids or tool_names' };

/** One tool of an agent's set, with the agent's settings for it. */
export const AgentTool = z.object({
  tool: Tool,
  /** Whether this agent's calls of the tool need approval: the agent's override, else the tool's default_requires_approval, else false. */
  requires_approval: z.boolean(),
  /** The agent's own setting; null: the tool's default_requires_approval applies. */
  requires_approval_override: z.boolean().nullable(),
  attached_at: z.string(),
});
export type AgentTool = z.infer<typeof AgentTool>;

export const AgentToolsAttach = defineRequest({
  subject: 'toolplane.v1.agents.tools.attach',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: `Attach tools of the org to an agent (by ids or names, at most ${MAX_TOOLS_PER_REQUEST}), all or none: one unknown tool is TOOL_NOT_FOUND and nothing changes. Attaching an attached tool is a no-op unless requires_approval is given: true/false overrides the tool's default_requires_approval for this agent, null clears the override.`,
  request: z
    .strictObject({
      org_id: OrgId,
      agent_id: AgentId,
      ...ToolRefs,
      requires_approval: z.boolean().nullable().optional(),
    })
    .refine(oneRefList, oneRefListMessage),
  reply: z.object({
    /** The requested tools as attached now, in request order. */
    tools: z.array(AgentTool),
    /** How many of them were not attached before. */
    attached: z.number().int(),
  }),
});

export const AgentToolsDetach = defineRequest({
  subject: 'toolplane.v1.agents.tools.detach',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:write',
  summary: `Detach tools from an agent (by ids or names, at most ${MAX_TOOLS_PER_REQUEST}). Tools that were not attached are skipped.`,
  request: z.strictObject({ org_id: OrgId, agent_id: AgentId, ...ToolRefs }).refine(oneRefList, oneRefListMessage),
  reply: z.object({ detached: z.array(z.object({ tool_id: ToolId, name: z.string() })) }),
});

export const AgentToolsList = defineRequest({
  subject: 'toolplane.v1.agents.tools.list',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary:
    "An agent's tools with its settings for each, in the order they were attached, a page at a time. An agent with no tools has an empty list.",
  request: z.strictObject({
    org_id: OrgId,
    agent_id: AgentId,
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ tools: z.array(AgentTool), next_cursor: z.string().nullable() }),
});

/** The model APIs definitions are made for. */
export const DefinitionFormat = z.enum(['openai_chat', 'openai_responses', 'anthropic', 'gemini', 'json_schema']);
export type DefinitionFormat = z.infer<typeof DefinitionFormat>;

const FunctionName = z.string().min(1).max(256);
const Description = z.string().optional();

/** Chat Completions `tools[]` item (ChatCompletionFunctionTool). */
export const OpenAIChatToolDefinition = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: FunctionName,
    description: Description,
    parameters: JsonObject,
    strict: z.boolean(),
  }),
});
/** Responses API `tools[]` item (FunctionTool). */
export const OpenAIResponsesToolDefinition = z.strictObject({
  type: z.literal('function'),
  name: FunctionName,
  description: Description,
  parameters: JsonObject,
  strict: z.boolean(),
});
/** Messages API `tools[]` item (a custom Tool). */
export const AnthropicToolDefinition = z.strictObject({
  name: FunctionName,
  description: Description,
  input_schema: z.looseObject({ type: z.literal('object') }),
  strict: z.literal(true).optional(),
});
/** Gemini's Schema: a select subset of the OpenAPI 3.0 schema object (as @google/genai types it; int64 bounds as strings). */
const Int64 = z.string().regex(/^-?[0-9]{1,19}$/);
export const GeminiSchema = z
  .strictObject({
    type: z.enum(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']).optional(),
    description: z.string().optional(),
    title: z.string().optional(),
    format: z.string().optional(),
    nullable: z.boolean().optional(),
    enum: z.array(z.string()).optional(),
    pattern: z.string().optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    minLength: Int64.optional(),
    maxLength: Int64.optional(),
    minItems: Int64.optional(),
    maxItems: Int64.optional(),
    minProperties: Int64.optional(),
    maxProperties: Int64.optional(),
    required: z.array(z.string()).optional(),
    propertyOrdering: z.array(z.string()).optional(),
    default: z.unknown().optional(),
    example: z.unknown().optional(),
    get items() {
      return GeminiSchema.optional();
    },
    get properties() {
      return z.record(z.string(), GeminiSchema).optional();
    },
    get anyOf() {
      return z.array(GeminiSchema).optional();
    },
  })
  .meta({ id: 'GeminiSchema' });
export type GeminiSchema = z.infer<typeof GeminiSchema>;
/**
 * Gemini `tools[].functionDeclarations[]` item (absent parameters: the function takes none); its
 * parameters are a GeminiSchema. The reply carries them as a plain object: checking the recursive
 * GeminiSchema on every reply costs ~0.5 ms for 50 tools, and the registry's converter emits only
 * its keywords by construction (its tests parse every conversion with GeminiDeclaration).
 */
export const GeminiFunctionDeclaration = z.strictObject({
  name: FunctionName,
  description: Description,
  parameters: JsonObject.optional().meta({ description: 'A GeminiSchema (see GeminiDeclaration in libs/contracts).' }),
});
/** GeminiFunctionDeclaration with its parameters checked as a GeminiSchema, level by level. */
export const GeminiDeclaration = GeminiFunctionDeclaration.extend({ parameters: GeminiSchema.optional() });
/** The provider-neutral function schema `{name, description, parameters}` (Letta's json_schema). */
export const JsonSchemaToolDefinition = z.strictObject({
  name: FunctionName,
  description: Description,
  parameters: JsonObject,
  strict: z.literal(true).optional(),
});

/** A tool of the agent's set that is not in `definitions`, and why (an INVALID schema, a provider limit). */
export const ExcludedTool = z.object({
  tool_id: ToolId,
  name: z.string(),
  health: SchemaHealth,
  reasons: z.array(z.string()),
});
export type ExcludedTool = z.infer<typeof ExcludedTool>;
/** A tool sent other than asked, and why (not strict-able, so sent non-strict; keywords a provider lacks, converted or dropped). */
export const DefinitionWarning = z.object({ tool_id: ToolId, name: z.string(), reasons: z.array(z.string()) });
export type DefinitionWarning = z.infer<typeof DefinitionWarning>;

const definitionsOf = <F extends DefinitionFormat, D extends z.ZodType>(format: F, definition: D) =>
  z.object({
    format: z.literal(format),
    strict: z.boolean(),
    definitions: z.array(definition),
    excluded: z.array(ExcludedTool),
    warnings: z.array(DefinitionWarning),
    /** Stands for this exact reply: send it back as if_none_match to skip an unchanged set. */
    etag: z.string(),
  });

export const AgentToolDefinitions = z.discriminatedUnion('format', [
  definitionsOf('openai_chat', OpenAIChatToolDefinition),
  definitionsOf('openai_responses', OpenAIResponsesToolDefinition),
  definitionsOf('anthropic', AnthropicToolDefinition),
  definitionsOf('gemini', GeminiFunctionDeclaration),
  definitionsOf('json_schema', JsonSchemaToolDefinition),
]);
export type AgentToolDefinitions = z.infer<typeof AgentToolDefinitions>;

export const AgentToolsDefinitions = defineRequest({
  subject: 'toolplane.v1.agents.tools.definitions',
  visibility: 'public',
  servedBy: 'registry',
  scope: 'tools:read',
  summary:
    "An agent's tools as one model API's tool definitions, in attachment order. strict: OpenAI/Anthropic strict mode (a tool that cannot be strict is sent non-strict, with a warning). Tools with an INVALID schema or breaking the provider's limits (name pattern, tool count) are excluded, with reasons. if_none_match: the etag of a set already held; an unchanged set answers {not_modified: true, etag}.",
  request: z
    .strictObject({
      org_id: OrgId,
      agent_id: AgentId,
      format: DefinitionFormat,
      strict: z.boolean().default(false),
      if_none_match: z.string().min(1).max(128).optional(),
    })
    .refine((r) => !(r.format === 'gemini' && r.strict), {
      message: 'gemini has no strict mode: leave strict out',
      path: ['strict'],
    }),
  reply: z.union([AgentToolDefinitions, z.object({ not_modified: z.literal(true), etag: z.string() })]),
});

/** One attachment a removal of its tool took away. */
export const AgentToolDetachment = z.object({ agent_id: AgentId, tool_id: ToolId, name: z.string() });
export type AgentToolDetachment = z.infer<typeof AgentToolDetachment>;

const AgentToolsEventBase = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  agent_id: AgentId,
});

export const AgentToolsAttached = defineEvent({
  subject: 'toolplane.v1.events.agent-tools.attached',
  publishedBy: ['registry'],
  summary: "Tools were attached to an agent, or the agent's settings for attached tools changed.",
  payload: AgentToolsEventBase.extend({
    tools: z.array(
      z.object({
        tool_id: ToolId,
        tool_name: z.string(),
        requires_approval: z.boolean(),
        requires_approval_override: z.boolean().nullable(),
      }),
    ),
  }),
});

export const AgentToolsDetached = defineEvent({
  subject: 'toolplane.v1.events.agent-tools.detached',
  publishedBy: ['registry'],
  summary:
    'Tools were detached from an agent: asked for (request), or their tool was deleted (tool_deleted) or removed by its source, e.g. an MCP resync (source_removed).',
  payload: AgentToolsEventBase.extend({
    tools: z.array(z.object({ tool_id: ToolId, tool_name: z.string() })),
    cause: z.enum(['request', 'tool_deleted', 'source_removed']),
  }),
});

export const AGENT_TOOL_EVENTS = [AgentToolsAttached, AgentToolsDetached] as const;
