import { z } from 'zod';
import { otelEnvShape } from '@toolplane/observability';

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** Variables every app reads. Each app extends this with its own and parses once at bootstrap. */
export const baseEnvShape = {
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  SUBJECT_PREFIX: z
    .string()
    .regex(/^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$/, 'dot-separated tokens')
    .default(''),
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535),
  HEALTH_HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  TOOLPLANE_PROFILE: z.enum(['development', 'production']).default('production'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  MAX_REQUEST_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /** NATS credentials and TLS (any combination the server asks for). */
  NATS_USER: z.string().optional(),
  NATS_PASSWORD: z.string().optional(),
  NATS_TOKEN: z.string().optional(),
  /** A NATS credentials file (user JWT + nkey seed). */
  NATS_CREDS: z.string().optional(),
  NATS_TLS_CA: z.string().optional(),
  NATS_TLS_CERT: z.string().optional(),
  NATS_TLS_KEY: z.string().optional(),
  /**
   * Replicas of every JetStream stream and KV bucket this app creates (events, the executor's work
   * queue, the MCP gateway's sessions and SSE events): 1 on a single nats-server, 3 on a three-node
   * JetStream cluster (deploy/base/configmap.yaml). Applies when a stream is created; an existing
   * stream keeps its count (raise it with `nats stream edit <name> --replicas 3`).
   */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** Reply subjects of this connection (`_INBOX.<app>` by default): the NATS permissions let only this user subscribe there. */
  NATS_INBOX_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'dot-separated tokens')
    .optional(),
  /**
   * The service identities: `<app>.key` (this app's X25519 key) and every app's `<app>.pub`.
   * Default `.toolplane/keys` in development (created on first start), `/etc/toolplane/keys` in production.
   */
  SERVICE_KEYS_DIR: z.string().optional(),
  /** How far a service message's clock may be off (older or newer messages are refused as replays). */
  SERVICE_CLOCK_SKEW_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  /** How often token revocations and signing keys are fetched from credentials. */
  AUTH_REFRESH_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  /** Without a successful fetch for this long, org tokens are refused (SERVICE_UNAVAILABLE) rather than trusted unchecked. */
  AUTH_MAX_STALE_MS: z.coerce.number().int().min(1000).default(30_000),
  AUTH_TOKEN_CACHE_MAX: z.coerce.number().int().min(1).default(10_000),
  ...otelEnvShape,
};
export const boolEnv = bool;

/** A variable holding JSON, checked by `schema`; `example` is shown when it is not JSON at all. */
export function jsonEnv<T extends z.ZodType>(schema: T, fallback: string, example: string) {
  return z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: `not JSON: expected ${example}` });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

export class ConfigError extends Error {}

/**
 * Parses an app's environment once. Every invalid variable is reported (names and reasons, never
 * values), then it throws.
 */
export function parseEnv<S extends z.ZodRawShape>(
  app: string,
  shape: S,
  env: NodeJS.ProcessEnv,
): z.infer<z.ZodObject<S>> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const r = z.object(shape).safeParse(cleaned);
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  throw new ConfigError(`${app}: invalid configuration\n${lines.join('\n')}`);
}

export type BaseConfig = z.infer<z.ZodObject<typeof baseEnvShape>>;
