import { z } from 'zod';
import { baseEnvShape, boolEnv, parseEnv } from '@toolplane/platform';

export const registryEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8081),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'a postgres:// URL').default('postgres://postgres@127.0.0.1:5432/postgres'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(10),
  DB_MIGRATE_ON_START: boolEnv.default(false),
  SCHEMA_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
};
export type RegistryConfig = z.infer<z.ZodObject<typeof registryEnvShape>>;

export function loadRegistryConfig(env: NodeJS.ProcessEnv = process.env): RegistryConfig {
  return parseEnv('registry', registryEnvShape, env);
}
