import {
  McpSyncErrorCode,
  type ExternalToolInput,
  type McpToolMetadata,
  type SchemaHealth,
} from '@toolplane/contracts';
import { normalizeMcpSchema, validateSchema } from '@toolplane/schema-engine';
import type { RawTool, SyncError } from './tool-discovery';

export interface ToolOrigin {
  id: string;
  name: string;
  toolPrefix: string | null;
}

export interface MappedTool {
  input: ExternalToolInput;
  health: SchemaHealth;
  reasons: string[];
}

/** Changes that lose nothing worth keeping the original schema for. */
const TRIVIAL_CHANGE = /(added additionalProperties: false|removed \$schema)$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function registryName(server: ToolOrigin, toolName: string): string {
  return server.toolPrefix ? `${server.toolPrefix}_${toolName}` : toolName;
}

/**
 * An MCP tool → the registry's external_mcp tool: the input schema normalized by the schema
 * engine, the function schema's health and reasons in metadata_.mcp (with the original schema
 * when normalization changed it, and the tool's title, output schema and annotations as the
 * server gave them), tagged `mcp:<server name>`. A tool whose schema is unusable is
 * still mapped, as INVALID.
 */
export function mapTool(server: ToolOrigin, raw: RawTool): MappedTool {
  const name = registryName(server, raw.name);
  const description =
    typeof raw.description === 'string' ? raw.description : typeof raw.title === 'string' ? raw.title : null;
  const own: string[] = [];
  let parameters: Record<string, unknown>;
  let changed = false;
  if (isObject(raw.inputSchema)) {
    const n = normalizeMcpSchema(raw.inputSchema);
    parameters = n.json_schema;
    // Keep the original only when normalization did more than close objects or drop $schema.
    changed = n.changes.some((c) => !TRIVIAL_CHANGE.test(c));
  } else {
    own.push('inputSchema: missing or not a JSON object');
    parameters = { type: 'object', properties: {}, additionalProperties: false };
  }
  if (raw.description !== undefined && typeof raw.description !== 'string') own.push('description: not a string');
  const jsonSchema = { name, description: description ?? '', parameters };
  const report = validateSchema(jsonSchema);
  const health: SchemaHealth = own.length ? 'INVALID' : report.health;
  const reasons = [...own, ...report.reasons];
  const mcp: McpToolMetadata = {
    server_id: server.id,
    server_name: server.name,
    tool_name: raw.name,
    health,
    reasons,
    ...(changed || own.length ? { original_schema: raw.inputSchema ?? null } : {}),
    ...(isObject(raw.annotations) ? { annotations: raw.annotations } : {}),
    // What an MCP client of the gateway is shown as the server gave it (its mapper reads these).
    ...(typeof raw.title === 'string' ? { title: raw.title } : {}),
    ...(isObject(raw.outputSchema) ? { output_schema: raw.outputSchema } : {}),
  };
  return {
    input: { name, description, json_schema: jsonSchema, tags: [`mcp:${server.name}`], metadata_: { mcp } },
    health,
    reasons,
  };
}

/** Maps every tool; a registry name listed twice keeps its first tool and the rest are reported. */
export function mapTools(server: ToolOrigin, tools: RawTool[]): { mapped: MappedTool[]; errors: SyncError[] } {
  const seen = new Set<string>();
  const mapped: MappedTool[] = [];
  const errors: SyncError[] = [];
  for (const raw of tools) {
    const m = mapTool(server, raw);
    if (seen.has(m.input.name)) {
      errors.push({
        code: McpSyncErrorCode.MCP_TOOL_DUPLICATE,
        tool: m.input.name,
        message: `the server lists ${m.input.name} more than once; the first one was kept`,
      });
      continue;
    }
    seen.add(m.input.name);
    mapped.push(m);
  }
  return { mapped, errors };
}
