import { z } from 'zod';
import { baseEnvShape, databaseEnvShape, parseEnv } from '@toolplane/platform';

export const registryEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8081),
  ...databaseEnvShape,
  SCHEMA_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
};
export type RegistryConfig = z.infer<z.ZodObject<typeof registryEnvShape>>;

export function loadRegistryConfig(env: NodeJS.ProcessEnv = process.env): RegistryConfig {
  return parseEnv('registry', registryEnvShape, env);
}
