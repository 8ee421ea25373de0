import { z } from 'zod';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

export const schemaEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8082),
  SCHEMA_MAX_SOURCE_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  SCHEMA_TIME_LIMIT_MS: z.coerce.number().int().min(10).default(2000),
};
export type SchemaConfig = z.infer<z.ZodObject<typeof schemaEnvShape>>;

export function loadSchemaConfig(env: NodeJS.ProcessEnv = process.env): SchemaConfig {
  return parseEnv('schema', schemaEnvShape, env);
}
