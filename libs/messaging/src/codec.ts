import { ErrorCode, findWireIssue, ToolplaneError, type RequestDescriptor } from '@toolplane/contracts';
import type { z } from 'zod';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Bytes → JSON value, or MALFORMED_MESSAGE. */
export function decodeJson(data: Uint8Array): unknown {
  let text: string;
  try {
    text = decoder.decode(data);
  } catch {
    throw new ToolplaneError(ErrorCode.MALFORMED_MESSAGE, 'Message body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    // The parser's message quotes the body (which may be a decrypted one): only the position is told.
    const at = /position (\d+)/.exec((e as Error).message)?.[1];
    throw new ToolplaneError(
      ErrorCode.MALFORMED_MESSAGE,
      `Message body is not valid JSON${at ? ` (at position ${at})` : ''}`,
    );
  }
}

/** Parse with a contract schema, or CONTRACT_VIOLATION listing every issue by path. */
export function parseContract<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => ({
    path: i.path.map(String).join('.') || '(root)',
    message: i.message,
    code: i.code,
  }));
  const summary = issues
    .slice(0, 5)
    .map((i) => `${i.path}: ${i.message}`)
    .join('; ');
  throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, `${what} does not match the contract: ${summary}`, { issues });
}

/** CONTRACT_VIOLATION naming the field when a request nests too deep or holds text that cannot be stored (NUL, lone surrogates). */
export function checkWireValue(d: RequestDescriptor, value: unknown): void {
  const bad = findWireIssue(value, d.opaque);
  if (bad)
    throw new ToolplaneError(
      ErrorCode.CONTRACT_VIOLATION,
      `Request to ${d.subject} does not match the contract: ${bad.path}: ${bad.message}`,
      { issues: [{ path: bad.path, message: bad.message, code: 'wire_value' }] },
    );
}
