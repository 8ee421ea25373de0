import { z } from 'zod';
import { baseEnvShape, databaseEnvShape, parseEnv } from '@toolplane/platform';

export const registryEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8081),
  ...databaseEnvShape,
  SCHEMA_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** How often every replica looks for tool events left in the outbox (JetStream was down, a replica died). */
  REGISTRY_OUTBOX_RELAY_MS: z.coerce.number().int().min(50).default(1000),
  /** An event this old is the relay's (younger ones are still being published by their writer). */
  REGISTRY_OUTBOX_RELAY_AFTER_MS: z.coerce.number().int().min(0).default(2000),
  /**
   * How long a replica keeps an agent's model-ready definitions. Tool and agent-tools events drop
   * them at once on every replica; this bounds staleness only when an event is missed. 0: no cache.
   */
  REGISTRY_DEFINITIONS_CACHE_TTL_MS: z.coerce.number().int().min(0).default(300_000),
  /** Definition sets (agent × format × strict) a replica keeps; reaching it drops them all. */
  REGISTRY_DEFINITIONS_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(2000),
  /** Schema checks (health and strict conversion, by schema content) a replica keeps. */
  REGISTRY_SCHEMA_CHECKS_MAX: z.coerce.number().int().min(1).default(10_000),
};
export type RegistryConfig = z.infer<z.ZodObject<typeof registryEnvShape>>;

export function loadRegistryConfig(env: NodeJS.ProcessEnv = process.env): RegistryConfig {
  return parseEnv('registry', registryEnvShape, env);
}
