import { z } from 'zod';

export const OrgId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'org_id: letters, digits, . _ : -');
/**
 * The end user a call is made for (org → agent → end user), e.g. the `sub` of the JWT the MCP
 * gateway verified: an opaque id, recorded on the call's execution and its events, the key of the
 * user's secrets (`scope: "user"`), and what a token may be bound to. Trimmed; 1–256 characters;
 * no control characters.
 */
export const EndUserId = z
  .string()
  .trim()
  .min(1)
  .max(256)
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'user_id: no control characters');
export const JsonObject = z.record(z.string(), z.unknown());
/** Python/TypeScript identifiers as OpenAI accepts them for function names. */
export const ToolName = z
  .string()
  .regex(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/, 'a function name of 1-64 letters, digits or _');
export const MAX_SOURCE_BYTES = 256 * 1024;
/** Largest docstring (Python: its value) or JSDoc comment schemas.generate reads, in UTF-8 bytes. */
export const MAX_DOCSTRING_BYTES = 64 * 1024;
/** Largest schema schemas.generate returns, in UTF-8 bytes of JSON. */
export const MAX_GENERATED_SCHEMA_BYTES = 512 * 1024;

/** How deep a request's JSON may nest (deeper input would cost recursion everywhere it goes). */
export const MAX_JSON_DEPTH = 64;

/**
 * The one rule for values on the wire, applied to every request before its contract: nothing
 * nested deeper than MAX_JSON_DEPTH, and every string (value or object key) storable — no NUL
 * (U+0000: Postgres text and jsonb refuse it, an env var cannot hold it) and no lone UTF-16
 * surrogate (not valid Unicode). A descriptor's `opaque` fields (tool arguments, handed to the tool
 * as they are and never stored as text) are exempt from the text rule, not from the depth.
 * Returns the first offending path.
 */
export function findWireIssue(
  value: unknown,
  opaque: readonly string[] = [],
): { path: string; message: string } | undefined {
  // Opaque fields by path: `args`, or `calls.*.args` (`*`: any key or index at that level).
  const patterns = opaque.map((o) => o.split('.'));
  const deepest = Math.max(0, ...patterns.map((p) => p.length));
  const isOpaque = (keys: readonly string[]) =>
    patterns.some((p) => p.length === keys.length && p.every((seg, i) => seg === '*' || seg === keys[i]));
  // `keys` is the path as far as an opaque pattern can reach; `depth` the nesting.
  const stack: Array<{ v: unknown; path: string; keys: string[]; depth: number; text: boolean }> = [
    { v: value, path: '', keys: [], depth: 0, text: true },
  ];
  while (stack.length) {
    const { v, path, keys, depth, text } = stack.pop()!;
    if (typeof v === 'string') {
      const why = text ? unstorable(v) : undefined;
      if (why) return { path: path || '(root)', message: why };
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_JSON_DEPTH)
        return { path: path || '(root)', message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
      for (const [k, child] of Array.isArray(v) ? v.entries() : Object.entries(v)) {
        const childPath = path ? `${path}.${k}` : String(k);
        const childKeys = text && depth < deepest ? [...keys, String(k)] : keys;
        const childText = text && !(depth < deepest && isOpaque(childKeys));
        const why = text && typeof k === 'string' ? unstorable(k) : undefined;
        if (why) return { path: childPath, message: `key ${why}` };
        stack.push({ v: child, path: childPath, keys: childKeys, depth: depth + 1, text: childText });
      }
    }
  }
  return undefined;
}

function unstorable(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which cannot be stored';
  if (!(s as string & { isWellFormed(): boolean }).isWellFormed())
    return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return undefined;
}
