import { z } from 'zod';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

export const executorEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8083),
  EXECUTE_DEFAULT_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  EXECUTE_MAX_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  TOOL_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  TOOL_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  REGISTRY_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** Bound on the credentials service's answer (it may call the org's webhook, up to 10 s). */
  CREDENTIALS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  /**
   * Upper bound on reusing an env reply that credentials marks reusable (orgs without a webhook);
   * CredentialsChanged broadcasts end reuse at once. 0: ask credentials on every call.
   */
  CREDENTIALS_ENV_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  CREDENTIALS_ENV_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  /** Most calls one execute-batch request may carry (more: BATCH_TOO_LARGE, nothing runs). */
  EXECUTE_BATCH_MAX_CALLS: z.coerce.number().int().min(1).max(1024).default(64),
  /** Most parallel-safe calls of one batch running at once. */
  EXECUTE_BATCH_MAX_CONCURRENCY: z.coerce.number().int().min(1).default(8),
  /** Extra time the executor waits for a runner beyond the tool's own timeout. */
  RUNNER_REPLY_MARGIN_MS: z.coerce.number().int().min(100).default(3000),
};
export type ExecutorConfig = z.infer<z.ZodObject<typeof executorEnvShape>>;

export function loadExecutorConfig(env: NodeJS.ProcessEnv = process.env): ExecutorConfig {
  const c = parseEnv('executor', executorEnvShape, env);
  if (c.EXECUTE_DEFAULT_TIMEOUT_MS > c.EXECUTE_MAX_TIMEOUT_MS) {
    throw new Error('executor: invalid configuration\n  EXECUTE_DEFAULT_TIMEOUT_MS: must not exceed EXECUTE_MAX_TIMEOUT_MS');
  }
  return c;
}
