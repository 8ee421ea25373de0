import { z } from 'zod';
import { baseEnvShape, boolEnv, ConfigError, databaseEnvShape, parseEnv } from '@toolplane/platform';
import { parseKeyRingSpec } from './key-ring-spec';

export const credentialsEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8085),
  ...databaseEnvShape,
  /** The key ring: `id:base64(32 bytes)` entries separated by commas (or newlines in the file). */
  CREDENTIALS_KEYS: z.string().optional(),
  /** The same, read from a file (a mounted Kubernetes Secret). */
  CREDENTIALS_KEYS_FILE: z.string().startsWith('/', 'an absolute path').optional(),
  /** The key that seals new values; default: the last key of the ring. */
  CREDENTIALS_ACTIVE_KEY: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a key id')
    .optional(),
  /** Development profile only: where the generated development key is kept. */
  CREDENTIALS_DEV_KEY_FILE: z.string().default('.toolplane/credentials-dev.key'),
  /** CIDRs a webhook may reach even though they are private/loopback/link-local (comma-separated). */
  CREDENTIALS_WEBHOOK_ALLOWED_CIDRS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^[0-9a-fA-F:.]+\/\d{1,3}$/, 'CIDRs like 10.1.0.0/16'))),
  /** Production only: allow http:// webhook URLs (development always allows them). */
  CREDENTIALS_WEBHOOK_ALLOW_HTTP: boolEnv.default(false),
  CREDENTIALS_WEBHOOK_MAX_REPLY_BYTES: z.coerce
    .number()
    .int()
    .min(256)
    .max(1024 * 1024)
    .default(64 * 1024),
  CREDENTIALS_WEBHOOK_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  /** How long an org's secrets, sandbox config and webhook row stay cached for env resolution (writes evict at once on this replica; 0 disables). */
  CREDENTIALS_ENV_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  CREDENTIALS_ENV_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
};
export type CredentialsConfig = z.infer<z.ZodObject<typeof credentialsEnvShape>>;

/**
 * Parses the environment; in production a key ring (CREDENTIALS_KEYS or CREDENTIALS_KEYS_FILE) is
 * required, except for commands that never touch a value (`requireKeys: false`, migrations).
 */
export function loadCredentialsConfig(
  env: NodeJS.ProcessEnv = process.env,
  opts: { requireKeys: boolean } = { requireKeys: true },
): CredentialsConfig {
  const c = parseEnv('credentials', credentialsEnvShape, env);
  const problems: string[] = [];
  if (c.CREDENTIALS_KEYS !== undefined) {
    try {
      const ring = parseKeyRingSpec(c.CREDENTIALS_KEYS);
      if (c.CREDENTIALS_ACTIVE_KEY && !ring.has(c.CREDENTIALS_ACTIVE_KEY))
        problems.push('  CREDENTIALS_ACTIVE_KEY: not a key id of CREDENTIALS_KEYS');
    } catch (e) {
      problems.push(`  CREDENTIALS_KEYS: ${(e as Error).message}`);
    }
  }
  if (c.CREDENTIALS_KEYS !== undefined && c.CREDENTIALS_KEYS_FILE !== undefined)
    problems.push('  CREDENTIALS_KEYS_FILE: give CREDENTIALS_KEYS or CREDENTIALS_KEYS_FILE, not both');
  if (
    opts.requireKeys &&
    c.TOOLPLANE_PROFILE === 'production' &&
    c.CREDENTIALS_KEYS === undefined &&
    c.CREDENTIALS_KEYS_FILE === undefined
  ) {
    problems.push(
      '  CREDENTIALS_KEYS: required in production (or CREDENTIALS_KEYS_FILE): `id:base64key` entries of 32-byte keys',
    );
  }
  if (problems.length) throw new ConfigError(`credentials: invalid configuration\n${problems.join('\n')}`);
  return c;
}
