import { z } from 'zod';

export const OrgId = z.string().min(1).max(128).regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'org_id: letters, digits, . _ : -');
export const JsonObject = z.record(z.string(), z.unknown());
/** Python/TypeScript identifiers as OpenAI accepts them for function names. */
export const ToolName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/, 'a function name of 1-64 letters, digits or _');
export const MAX_SOURCE_BYTES = 256 * 1024;
