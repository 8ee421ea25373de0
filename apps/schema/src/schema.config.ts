import { z } from 'zod';
import { MAX_SOURCE_BYTES } from '@toolplane/contracts';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

export const schemaEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8082),
  SCHEMA_MAX_SOURCE_BYTES: z.coerce.number().int().min(1024).default(MAX_SOURCE_BYTES),
  SCHEMA_TIME_LIMIT_MS: z.coerce.number().int().min(10).default(2000),
  SCHEMA_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
  SCHEMA_QUEUE_MAX: z.coerce.number().int().min(0).default(100),
  /** Workers one org may hold at once (default: all but one, so another org always finds one). */
  SCHEMA_WORKERS_PER_ORG: z.coerce.number().int().min(1).optional(),
  SCHEMA_WORKER_MEMORY_MB: z.coerce.number().int().min(32).default(128),
};
export type SchemaConfig = z.infer<z.ZodObject<typeof schemaEnvShape>>;

export function loadSchemaConfig(env: NodeJS.ProcessEnv = process.env): SchemaConfig {
  return parseEnv('schema', schemaEnvShape, env);
}
