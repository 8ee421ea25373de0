import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Tool, ToolExecutionResult } from '@toolplane/contracts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The annotation hints MCP defines (ToolAnnotations); anything else in metadata is not passed on. */
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/**
 * A registry tool → its MCP definition. inputSchema: an MCP tool's own schema as its server gave
 * it (metadata_.mcp.original_schema) when normalization changed it, else the stored function
 * schema's parameters. title, outputSchema and annotations: an MCP tool's from its server
 * (metadata_.mcp.{title, output_schema, annotations}), a custom tool's from its metadata_
 * (`title`, `output_schema`, `annotations` with the MCP hint names).
 */
export function toMcpTool(t: Tool): McpTool {
  const meta = isObject(t.metadata_) ? t.metadata_ : {};
  const mcp = isObject(meta.mcp) ? meta.mcp : undefined;
  const source = mcp ?? meta;
  const js = isObject(t.json_schema) ? t.json_schema : {};
  const original = mcp && isObject(mcp.original_schema) ? mcp.original_schema : undefined;
  const params = original ?? (isObject(js.parameters) ? js.parameters : { type: 'object', properties: {} });
  const inputSchema = { ...params, type: 'object' } as McpTool['inputSchema'];
  const title = str(source.title) ?? (isObject(source.annotations) ? str(source.annotations.title) : undefined);
  const output = source.output_schema ?? source.outputSchema;
  const annotations = isObject(source.annotations) ? pickHints(source.annotations) : undefined;
  return {
    name: t.name ?? t.id,
    ...(title ? { title } : {}),
    description: t.description ?? str(js.description) ?? '',
    inputSchema,
    ...(isObject(output) && output.type === 'object' ? { outputSchema: output as McpTool['outputSchema'] } : {}),
    ...(annotations ? { annotations } : {}),
    // Any call can run as an MCP task (an async execution): the client chooses.
    execution: { taskSupport: 'optional' },
  };
}

function pickHints(a: Record<string, unknown>): McpTool['annotations'] | undefined {
  const out: Record<string, unknown> = {};
  for (const h of HINTS) if (typeof a[h] === 'boolean') out[h] = a[h];
  if (typeof a.title === 'string') out.title = a.title;
  return Object.keys(out).length ? (out as McpTool['annotations']) : undefined;
}

type Content = CallToolResult['content'][number];

/**
 * A typed part of an MCP upstream's result (mcp-sync's content-mapper: snake_case fields) back
 * into MCP content, as the upstream sent it.
 */
function toContent(p: Record<string, unknown>): Content {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: str(p.text) ?? '' };
    case 'image':
    case 'audio':
      return { type: p.type, data: str(p.data) ?? '', mimeType: str(p.mime_type) ?? 'application/octet-stream' };
    case 'resource': {
      const uri = str(p.uri) ?? '';
      const mimeType = str(p.mime_type);
      const resource =
        typeof p.blob === 'string'
          ? { uri, blob: p.blob, ...(mimeType ? { mimeType } : {}) }
          : { uri, text: str(p.text) ?? '', ...(mimeType ? { mimeType } : {}) };
      return { type: 'resource', resource };
    }
    case 'resource_link': {
      const mimeType = str(p.mime_type);
      const description = str(p.description);
      return {
        type: 'resource_link',
        uri: str(p.uri) ?? '',
        name: str(p.name) ?? '',
        ...(mimeType ? { mimeType } : {}),
        ...(description ? { description } : {}),
      };
    }
    default:
      return { type: 'text', text: JSON.stringify(p) };
  }
}

/** An MCP upstream's media result as mcp-sync relays it: `{text, content: [parts], structured_content?}`. */
function isRelayedMedia(
  v: unknown,
): v is { text: string; content: Record<string, unknown>[]; structured_content?: unknown } {
  return isObject(v) && typeof v.text === 'string' && Array.isArray(v.content) && v.content.every(isObject);
}

/**
 * A Toolplane result → MCP's CallToolResult. Text stays text; JSON becomes structuredContent with
 * its text beside it (older clients read the text); an MCP upstream's images, audio and resources
 * come back as the upstream sent them. A failed call is `isError: true` with the tool's message,
 * so the model can see it and correct itself.
 */
export function toCallToolResult(r: ToolExecutionResult, provider = r.provider): CallToolResult {
  const meta = { 'toolplane/execution_id': r.execution_id, 'toolplane/trace_id': r.trace_id };
  if (r.status === 'error') {
    const text =
      typeof r.func_return === 'string' && r.func_return ? r.func_return : (r.error?.message ?? 'The tool failed');
    return {
      content: [{ type: 'text', text }],
      isError: true,
      _meta: { ...meta, 'toolplane/error_code': r.error?.code ?? null },
    };
  }
  const v = r.func_return;
  if (provider === 'mcp' && isRelayedMedia(v)) {
    return {
      content: v.content.map(toContent),
      ...(isObject(v.structured_content) ? { structuredContent: v.structured_content } : {}),
      _meta: meta,
    };
  }
  if (typeof v === 'string') return { content: [{ type: 'text', text: v }], _meta: meta };
  if (v === undefined || v === null)
    return { content: [{ type: 'text', text: v === null ? 'null' : '' }], _meta: meta };
  const text = JSON.stringify(v);
  return { content: [{ type: 'text', text }], ...(isObject(v) ? { structuredContent: v } : {}), _meta: meta };
}
