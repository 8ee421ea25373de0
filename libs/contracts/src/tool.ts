import { z } from 'zod';
import { JsonObject } from './common';

/**
 * The seed's ToolType enum (shared/seeds/tool.schema.json), plus `client` (issue 16, a deliberate
 * difference, see libs/contracts/seed/README.md): a client-side tool, registered with its schema
 * and no source, that the agent runtime runs itself (Toolplane never does).
 */
export const ToolType = z.enum([
  'custom',
  'client',
  'letta_core',
  'letta_memory_core',
  'letta_multi_agent_core',
  'letta_sleeptime_core',
  'letta_voice_sleeptime_core',
  'letta_builtin',
  'letta_files_core',
  'external_langchain',
  'external_composio',
  'external_mcp',
]);
export type ToolType = z.infer<typeof ToolType>;

export const SourceType = z.enum(['python', 'typescript']);
export type SourceType = z.infer<typeof SourceType>;

export const PipRequirement = z.object({ name: z.string().min(1), version: z.string().nullable().optional() });
export const NpmRequirement = z.object({ name: z.string().min(1), version: z.string().nullable().optional() });

export const TOOL_ID = /^tool-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ToolId = z.string().regex(TOOL_ID, 'an id like tool-<uuid>');

/** A tool on the wire: exactly the seed's fields (additionalProperties: false). */
export const Tool = z.strictObject({
  id: ToolId,
  tool_type: ToolType,
  description: z.string().nullable(),
  source_type: z.string().nullable(),
  name: z.string().nullable(),
  tags: z.array(z.string()),
  source_code: z.string().nullable(),
  json_schema: JsonObject.nullable(),
  args_json_schema: JsonObject.nullable(),
  return_char_limit: z.number().int().min(1).max(1_000_000),
  pip_requirements: z.array(PipRequirement).nullable(),
  npm_requirements: z.array(NpmRequirement).nullable(),
  default_requires_approval: z.boolean().nullable(),
  enable_parallel_execution: z.boolean().nullable(),
  created_by_id: z.string().nullable(),
  last_updated_by_id: z.string().nullable(),
  metadata_: JsonObject.nullable(),
  project_id: z.string().nullable(),
});
export type Tool = z.infer<typeof Tool>;

export const DEFAULT_RETURN_CHAR_LIMIT = 50_000;

/** Tool types Toolplane itself provides in every org: listed and attached like any tool, never written by tenants (TOOL_READ_ONLY). */
export const BUILTIN_TOOL_TYPES: ReadonlySet<string> = new Set<ToolType>([
  'letta_builtin',
  'letta_core',
  'letta_memory_core',
]);

/**
 * Tool types whose calls the agent runtime runs itself (awaiting_client): client tools, and the
 * core families (send_message, memory and archival tools), whose state lives in the agent runtime.
 */
export const CLIENT_SIDE_TOOL_TYPES: ReadonlySet<string> = new Set<ToolType>([
  'client',
  'letta_core',
  'letta_memory_core',
]);

/** run_code's languages (BUILTINS.md); which of them a provider runs is the executor's to say. */
export const RUN_CODE_LANGUAGES = ['python', 'js', 'ts', 'r', 'java'] as const;
