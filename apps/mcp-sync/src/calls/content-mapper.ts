/** MCP tool results → a ToolExecutionResult's func_return. */

export type Part =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mime_type: string | null; data: string }
  | { type: 'resource'; uri: string | null; mime_type: string | null; text?: string; blob?: string }
  | { type: 'resource_link'; uri: string | null; name: string | null; mime_type: string | null; description?: string }
  | ({ type: string } & Record<string, unknown>);

export interface CallResultLike {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

export function toPart(raw: unknown): Part {
  const c = obj(raw);
  switch (c.type) {
    case 'text':
      return { type: 'text', text: str(c.text) ?? '' };
    case 'image':
    case 'audio':
      return { type: c.type, mime_type: str(c.mimeType), data: str(c.data) ?? '' };
    case 'resource': {
      const r = obj(c.resource);
      return {
        type: 'resource',
        uri: str(r.uri),
        mime_type: str(r.mimeType),
        ...(typeof r.text === 'string' ? { text: r.text } : {}),
        ...(typeof r.blob === 'string' ? { blob: r.blob } : {}),
      };
    }
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: str(c.uri),
        name: str(c.name),
        mime_type: str(c.mimeType),
        ...(typeof c.description === 'string' ? { description: c.description } : {}),
      };
    default:
      return { ...c, type: typeof c.type === 'string' ? c.type : 'unknown' };
  }
}

/**
 * Text only → the texts joined by newlines. structuredContent (and no other media) → that JSON.
 * Images, audio or resources → `{text, content: [typed parts in order], structured_content?}`.
 */
export function toFuncReturn(result: CallResultLike): unknown {
  const parts = (result.content ?? []).map(toPart);
  const text = parts.flatMap((p) => (p.type === 'text' ? [(p as { text: string }).text] : [])).join('\n');
  const media = parts.some((p) => p.type !== 'text');
  if (!media && result.structuredContent !== undefined && !result.isError) return result.structuredContent;
  if (!media) return text;
  return {
    text,
    content: parts,
    ...(result.structuredContent !== undefined ? { structured_content: result.structuredContent } : {}),
  };
}

/** The server's own words for an isError result (for error.message). */
export function errorText(result: CallResultLike): string {
  const text = (result.content ?? [])
    .map(toPart)
    .flatMap((p) => (p.type === 'text' ? [(p as { text: string }).text] : []))
    .join('\n');
  return text || 'the tool reported an error without a message';
}
