/**
 * The schema service's work, as jobs a worker thread runs (schemas.worker.ts) and the service
 * sends (SchemasService): what crosses the thread boundary is plain data, and a
 * SchemaGenerationError comes back as `failed` rather than as an exception.
 */
import type { ReplyOf, SchemasNormalize } from '@toolplane/contracts';
import {
  jsonByteLength,
  SchemaGenerationError,
  type GenerateInput,
  type SchemaEngine,
  type SchemaEngineOptions,
  type SchemaErrorDetails,
  type SchemaErrorReason,
} from '@toolplane/schema-engine';

export type SchemaJob =
  | { op: 'generate'; input: GenerateInput }
  | { op: 'validate' | 'strictify' | 'normalize'; json_schema: Record<string, unknown> };

export type SchemaFailure = SchemaErrorDetails & { reason: SchemaErrorReason; message: string };

export type SchemaJobResult = { ok: unknown } | { failed: SchemaFailure };

/**
 * What a worker starts with (its workerData). The contracts' limits come in here rather than by
 * import: a worker that imported @toolplane/contracts would hold zod and every contract, ~17 MiB
 * resident per worker, for one number.
 */
export interface SchemaWorkerData {
  engine: SchemaEngineOptions;
  /** MAX_ECHOED_SCHEMA_BYTES (contracts). */
  maxEchoedSchemaBytes: number;
}

export function runSchemaJob(engine: SchemaEngine, job: SchemaJob, maxEchoedSchemaBytes: number): SchemaJobResult {
  try {
    switch (job.op) {
      case 'generate':
        return { ok: engine.generate(job.input) };
      case 'validate':
        return { ok: engine.validate(job.json_schema) };
      case 'strictify':
        return { ok: engine.toStrict(job.json_schema) };
      case 'normalize':
        return { ok: normalizeReply(engine, job.json_schema, maxEchoedSchemaBytes) };
    }
  } catch (e) {
    if (!(e instanceof SchemaGenerationError)) throw e;
    const { reason, message, line, column, functionName, parameter } = e;
    return { failed: { reason, message, line, column, functionName, parameter } };
  }
}

/**
 * schemas.normalize's reply: the normalized schema, and the input beside it only when that is
 * at most `maxEchoed` (MAX_ECHOED_SCHEMA_BYTES) of JSON (a reply carrying a large input twice passed the bus'
 * 1 MiB limit); `changes` then says it was left out.
 */
function normalizeReply(
  engine: SchemaEngine,
  input: Record<string, unknown>,
  maxEchoed: number,
): ReplyOf<typeof SchemasNormalize> {
  const { original_json_schema: _original, ...normalized } = engine.normalizeMcp(input);
  if (jsonByteLength(input, maxEchoed) <= maxEchoed) return { ...normalized, original_json_schema: input };
  return {
    ...normalized,
    changes: [
      ...normalized.changes,
      `original_json_schema left out: the input is more than ${maxEchoed} bytes of JSON`,
    ],
  };
}
