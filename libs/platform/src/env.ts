import { z } from 'zod';
import { otelEnvShape } from '@toolplane/observability';

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** Variables every app reads. Each app extends this with its own and parses once at bootstrap. */
export const baseEnvShape = {
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  SUBJECT_PREFIX: z.string().regex(/^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$/, 'dot-separated tokens').default(''),
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535),
  HEALTH_HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  TOOLPLANE_PROFILE: z.enum(['development', 'production']).default('production'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  MAX_REQUEST_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  ...otelEnvShape,
};
export const boolEnv = bool;

export class ConfigError extends Error {}

/**
 * Parses an app's environment once. Every invalid variable is reported (names and reasons, never
 * values), then it throws.
 */
export function parseEnv<S extends z.ZodRawShape>(app: string, shape: S, env: NodeJS.ProcessEnv): z.infer<z.ZodObject<S>> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const r = z.object(shape).safeParse(cleaned);
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  throw new ConfigError(`${app}: invalid configuration\n${lines.join('\n')}`);
}

export type BaseConfig = z.infer<z.ZodObject<typeof baseEnvShape>>;
