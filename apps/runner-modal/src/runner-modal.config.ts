import { z } from 'zod';
import { baseEnvShape, boolEnv as bool, parseEnv } from '@toolplane/platform';
import { listEnv as list, sandboxPathEnv as absolute } from '@toolplane/remote-runner';

export const modalEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8088),
  // Modal endpoint and credentials
  /** The runner's own token pair, for orgs that set none (an org's provider-scoped secrets MODAL_TOKEN_ID/MODAL_TOKEN_SECRET win). Unset: such orgs get PROVIDER_AUTH_FAILED. */
  MODAL_TOKEN_ID: z.string().min(1).optional(),
  MODAL_TOKEN_SECRET: z.string().min(1).optional(),
  /** Modal's API (the SDK reads this variable itself; default https://api.modal.com:443); a fake's URL in development and tests. */
  MODAL_SERVER_URL: z.url().optional(),
  /** Modal environment of the apps and sandboxes (default: the workspace's default). */
  MODAL_ENVIRONMENT: z.string().min(1).max(64).optional(),
  /** The Modal app every sandbox belongs to. */
  MODAL_APP: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .default('toolplane-runner'),
  /** Tag `toolplane-deployment` of every sandbox this deployment makes: how a restarted runner finds them again (and only them). */
  MODAL_DEPLOYMENT: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ -')
    .default('toolplane'),
  /** Base image of the sandboxes (a slim Python); requirements are installed into /opt/toolplane/venv at image build time. */
  MODAL_IMAGE: z.string().min(1).default('python:3.12-slim'),
  MODAL_SDK_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('error'),
  // Admission and the pool
  MODAL_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(4096).default(64),
  MODAL_MAX_CONCURRENCY_PER_ORG: z.coerce.number().int().min(1).max(4096).optional(),
  /** Sandboxes alive (or starting) at once for one org. */
  MODAL_MAX_SANDBOXES_PER_ORG: z.coerce.number().int().min(1).max(10_000).default(10),
  /** Sandboxes alive (or starting) at once for all orgs together: places go to waiting orgs in turn, idle sandboxes of others are terminated to make room. */
  MODAL_MAX_SANDBOXES: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Idle ready sandboxes kept per environment ahead of demand (created in the background, within the org's bound). */
  MODAL_WARM_SANDBOXES: z.coerce.number().int().min(0).max(100).default(1),
  /** A sandbox idle this long is terminated. */
  MODAL_IDLE_TTL_MS: z.coerce.number().int().min(1000).default(300_000),
  /** How often idle sandboxes are looked for (default: a quarter of MODAL_IDLE_TTL_MS, between 250 ms and 5 s). */
  MODAL_REAP_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).optional(),
  /** Modal's own lifetime of a sandbox (it ends it then even if in use): whole seconds. */
  MODAL_SANDBOX_TIMEOUT_S: z.coerce.number().int().min(60).max(86_400).default(3600),
  /** CPU (cores) and memory (MiB) of each sandbox when the org's sandbox config does not say. */
  MODAL_CPU: z.coerce.number().min(0.125).max(64).default(1),
  MODAL_MEMORY_MIB: z.coerce.number().int().min(128).max(262_144).default(1024),
  /** Internet access of sandboxes whose sandbox config does not say (blockNetwork otherwise). */
  MODAL_NETWORK: bool.default(false),
  /** How long a call waits for its sandbox (image build, create, readiness probe) before ENVIRONMENT_BUILDING. */
  MODAL_BUILD_WAIT_MS: z.coerce.number().int().min(0).default(60_000),
  // Packages (installed in the image, at build time)
  MODAL_PIP_INDEX_URL: z.string().optional(),
  /** Wheel directories (paths the image build sees) or URLs. */
  MODAL_PIP_FIND_LINKS: list.default([]),
  MODAL_PIP_NO_INDEX: bool.default(false),
  // A call's output
  MODAL_STDOUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  MODAL_STDERR_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  MODAL_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(16 * 1024 * 1024),
  // Inside the sandbox
  MODAL_PYTHON: absolute.default('/usr/local/bin/python3'),
  MODAL_NODE: absolute.default('/usr/bin/node'),
  /**
   * Image build step (a shell command, run as a Dockerfile RUN line) that gives TypeScript/JavaScript
   * tools' images MODAL_NODE. The default installs Debian's nodejs when the base has no node.
   */
  MODAL_NODE_INSTALL: z
    .string()
    .min(1)
    .default(
      'command -v node >/dev/null 2>&1 || (apt-get update && apt-get install -y --no-install-recommends nodejs && rm -rf /var/lib/apt/lists/*)',
    ),
  /** The runner's dir in each sandbox: harnesses and per-call dirs. */
  MODAL_STATE_DIR: absolute.default('/root/.toolplane'),
  /** Uid tools run as when the launcher runs as root. */
  MODAL_TOOL_UID: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 2)
    .default(1500),
  MODAL_WATCH_PATHS: list.default(['/root', '/tmp', '/var/tmp', '/dev/shm']).pipe(z.array(absolute)),
  /** Time an exec gets past its tool's timeout (the launcher stops the tool itself at the timeout); rounded up to whole seconds, Modal's unit. */
  MODAL_COMMAND_GRACE_MS: z.coerce.number().int().min(100).default(10_000),
};
export type ModalRunnerConfig = z.infer<z.ZodObject<typeof modalEnvShape>>;

export function loadModalRunnerConfig(env: NodeJS.ProcessEnv = process.env): ModalRunnerConfig {
  return parseEnv('runner-modal', modalEnvShape, env);
}
