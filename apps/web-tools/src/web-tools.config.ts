import { z } from 'zod';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/**
 * web-tools reads only its own settings: no database, no key ring, no other service's secrets.
 * Everything it fetches goes through the one SSRF policy (libs/platform outbound).
 */
export const webToolsEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8089),
  /** The service's own Exa key, used when a call brings none (the agent's EXA_API_KEY secret wins). */
  EXA_API_KEY: z.string().min(1).optional(),
  /** Where the Exa SDK sends requests (tests and the development profile point it at tools/fakes/exa). */
  EXA_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.exa.ai'),
  /** A fetch_webpage response larger than this is cut off with CONTENT_TOO_LARGE. */
  WEB_FETCH_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(5 * 1024 * 1024),
  /** Bound on a whole fetch (every redirect hop, headers and body) and on one Exa call. */
  WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  WEB_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  WEB_FETCH_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
  /** The operator's allowlist for private targets: host names, IPs or CIDRs (comma-separated). */
  WEB_FETCH_ALLOWED_HOSTS: list,
  /** The text a call answers is cut to this many UTF-8 bytes (a NATS message is at most 1 MiB; the executor cuts further to the tool's return_char_limit). */
  WEB_REPLY_MAX_BYTES: z.coerce.number().int().min(1024).max(700_000).default(400_000),
};
export type WebToolsConfig = z.infer<z.ZodObject<typeof webToolsEnvShape>>;

export function loadWebToolsConfig(env: NodeJS.ProcessEnv = process.env): WebToolsConfig {
  return parseEnv('web-tools', webToolsEnvShape, env);
}
