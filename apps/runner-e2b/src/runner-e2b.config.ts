import { z } from 'zod';
import { baseEnvShape, boolEnv as bool, parseEnv } from '@toolplane/platform';
import { listEnv as list, sandboxPathEnv as absolute } from '@toolplane/remote-runner';

export const e2bEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8087),
  // E2B endpoints and credentials
  /** The runner's own key, for orgs that set none (an org's provider-scoped secret E2B_API_KEY wins). Unset: such orgs get PROVIDER_AUTH_FAILED. */
  E2B_API_KEY: z.string().min(1).optional(),
  /** E2B's control-plane API (default https://api.<E2B_DOMAIN>); a fake's URL in development and tests. */
  E2B_API_URL: z.url().optional(),
  /** Where all sandbox (envd) traffic goes, with an E2b-Sandbox-Id header (default: each sandbox's own host). */
  E2B_SANDBOX_URL: z.url().optional(),
  E2B_DOMAIN: z.string().min(1).optional(),
  /** Each request to E2B (not a command: those have the call's timeout). */
  E2B_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Retries of a rate-limited (429 with Retry-After) control-plane request inside the SDK; 0: the call answers PROVIDER_RATE_LIMITED at once (the org's fallback list applies). */
  E2B_API_RETRIES: z.coerce.number().int().min(0).max(10).default(0),
  /** Template of the sandboxes when the org's sandbox config names none. */
  E2B_TEMPLATE: z.string().min(1).max(256).default('base'),
  /** Tag `toolplane-runner-deployment` of every sandbox this deployment makes: how a restarted runner finds them again (and only them). */
  E2B_DEPLOYMENT: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ -')
    .default('toolplane'),
  // Admission and the pool
  E2B_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(4096).default(64),
  /** Calls of one org at once (default: three quarters of E2B_MAX_CONCURRENCY); waiting orgs take turns. */
  E2B_MAX_CONCURRENCY_PER_ORG: z.coerce.number().int().min(1).max(4096).optional(),
  /** Sandboxes alive (or starting) at once, all orgs. */
  E2B_MAX_SANDBOXES: z.coerce.number().int().min(1).max(10_000).default(50),
  /** Sandboxes alive (or starting) at once for one org. */
  E2B_MAX_SANDBOXES_PER_ORG: z.coerce.number().int().min(1).max(10_000).default(10),
  /** A sandbox idle this long is killed (E2B's own timeout on it is this plus a minute, renewed while in use). */
  E2B_IDLE_TTL_MS: z.coerce.number().int().min(1000).default(300_000),
  /** How long a call waits for its environment (a sandbox made and its requirements installed) before ENVIRONMENT_BUILDING; bounded by the caller's deadline. */
  E2B_BUILD_WAIT_MS: z.coerce.number().int().min(0).default(10_000),
  /** Longest environment build (pip / npm install in the sandbox). */
  E2B_BUILD_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /** A failed requirements install is the answer (DEPENDENCY_INSTALL_FAILED) for this long before a call tries again (prepare always does). */
  E2B_BUILD_RETRY_MS: z.coerce.number().int().min(0).default(30_000),
  // A call's output
  E2B_STDOUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  E2B_STDERR_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  /** Output (stdout + stderr) past which the launcher stops the tool: OUTPUT_LIMIT_EXCEEDED. */
  E2B_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(16 * 1024 * 1024),
  /** Time a command gets past its tool's timeout (the launcher stops the tool itself at the timeout) before it is given up and its sandbox killed. */
  E2B_COMMAND_GRACE_MS: z.coerce.number().int().min(100).default(10_000),
  /** Internet access of sandboxes whose sandbox config does not say. */
  E2B_NETWORK: bool.default(false),
  // Packages (installed in the sandbox, once per sandbox)
  E2B_PIP_INDEX_URL: z.string().optional(),
  E2B_PIP_EXTRA_INDEX_URL: z.string().optional(),
  /** Wheel directories (paths inside the sandbox: a template's, or a fake's read-only binds) or URLs. */
  E2B_PIP_FIND_LINKS: list.default([]),
  E2B_PIP_NO_INDEX: bool.default(false),
  E2B_NPM_REGISTRY: z.string().optional(),
  // Inside the sandbox
  E2B_PYTHON: absolute.default('/usr/bin/python3'),
  E2B_NODE: absolute.default('/usr/bin/node'),
  E2B_NPM: absolute.default('/usr/bin/npm'),
  /** The runner's dir in each sandbox: harnesses, environments, per-call dirs. */
  E2B_STATE_DIR: absolute.default('/home/user/.toolplane'),
  /** The sandbox user the launcher runs as. root (E2B's default template has it): the launcher drops each tool to E2B_TOOL_UID. */
  E2B_COMMAND_USER: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/)
    .default('root'),
  /** Uid tools run as when the launcher runs as root: no sudo, no home, owns nothing but its call's work dir. */
  E2B_TOOL_UID: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 2)
    .default(1500),
  /** Paths whose changes (ctime) make a sandbox dirty after a call (it is then killed, never reused). */
  E2B_WATCH_PATHS: list.default(['/home/user', '/tmp', '/var/tmp', '/dev/shm']).pipe(z.array(absolute)),
};
export type E2bRunnerConfig = z.infer<z.ZodObject<typeof e2bEnvShape>>;

export function loadE2bRunnerConfig(env: NodeJS.ProcessEnv = process.env): E2bRunnerConfig {
  return parseEnv('runner-e2b', e2bEnvShape, env);
}
