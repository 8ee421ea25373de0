/**
 * Size limits of one generate() call. Every part of generation is linear in its input; these keep
 * the input, and what it can expand to, small enough that the time limit is never the only bound.
 */
import { SchemaGenerationError, type SchemaErrorDetails } from './schema-generation.error';

/** Largest accepted source, in UTF-8 bytes (the contract's MAX_SOURCE_BYTES). */
export const DEFAULT_MAX_SOURCE_BYTES = 256 * 1024;
/** Largest docstring (Python: its value) or JSDoc comment read, in UTF-8 bytes (the contract's MAX_DOCSTRING_BYTES). */
export const DEFAULT_MAX_DOCSTRING_BYTES = 64 * 1024;
/** Largest generated schema, in UTF-8 bytes of JSON (the contract's MAX_GENERATED_SCHEMA_BYTES). */
export const DEFAULT_MAX_SCHEMA_BYTES = 512 * 1024;
/** Deepest nesting of types in a generated schema (the validator calls more than 10 non-strict already). */
export const MAX_SCHEMA_DEPTH = 64;

/** Throws SOURCE_TOO_LARGE when a docstring is over the limit; `what` names it ("function 'f'"). */
export function checkDocstringSize(
  doc: string,
  maxBytes: number,
  what: string,
  details: SchemaErrorDetails & { line: number },
): void {
  if (doc.length <= maxBytes / 3) return; // cannot be over: at most 3 UTF-8 bytes per UTF-16 unit
  const bytes = Buffer.byteLength(doc, 'utf8');
  if (bytes > maxBytes) {
    throw new SchemaGenerationError(
      'SOURCE_TOO_LARGE',
      `The docstring of ${what} (line ${details.line}) is ${bytes} bytes; the limit is ${maxBytes} bytes`,
      details,
    );
  }
}
