import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { baseEnvShape, boolEnv as bool, jsonEnv, parseCidr, parseEnv } from '@toolplane/platform';

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

export const runnerEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8084),
  /** `bwrap` (namespaces + seccomp + rlimits, the default) or `unsafe` (a plain subprocess; announced everywhere). */
  RUNNER_ISOLATION: z.enum(['bwrap', 'unsafe']).default('bwrap'),
  RUNNER_BWRAP: z.string().startsWith('/', 'an absolute path').default('/usr/bin/bwrap'),
  RUNNER_PYTHON: z.string().startsWith('/', 'an absolute path').default('/usr/bin/python3'),
  RUNNER_WORK_ROOT: z.string().startsWith('/', 'an absolute path').default(join(tmpdir(), 'toolplane-runs')),
  RUNNER_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16),
  /** Calls of one org run at once (default: three quarters of RUNNER_MAX_CONCURRENCY); waiting orgs take turns. */
  RUNNER_MAX_CONCURRENCY_PER_ORG: z.coerce.number().int().min(1).max(1024).optional(),
  RUNNER_STDOUT_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  RUNNER_STDERR_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  RUNNER_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024),
  /** Unprivileged uid/gid for tool processes when the runner itself runs as root. */
  RUNNER_RUN_AS_UID: z.coerce.number().int().min(1).default(65534),
  RUNNER_RUN_AS_GID: z.coerce.number().int().min(1).default(65534),
  // Default kernel limits of a call (a sandbox config may override them per call).
  RUNNER_LIMIT_MEMORY_MB: z.coerce.number().int().min(16).default(512),
  RUNNER_LIMIT_CPU_SECONDS: z.coerce.number().int().min(1).default(60),
  RUNNER_LIMIT_PROCESSES: z.coerce.number().int().min(1).default(64),
  RUNNER_LIMIT_OPEN_FILES: z.coerce.number().int().min(16).default(256),
  RUNNER_LIMIT_FILE_SIZE_MB: z.coerce.number().int().min(1).default(64),
  RUNNER_LIMIT_WORK_DIR_MB: z.coerce.number().int().min(1).default(64),
  /** Network for calls whose sandbox config does not say (off: an empty network namespace). */
  RUNNER_NETWORK: bool.default(false),
  /**
   * May a call have network (`network: "egress"` in its sandbox config, or RUNNER_NETWORK)? Each
   * such call gets a network namespace of its own through slirp4netns, under the egress policy.
   * false: every call runs without network (and says so).
   */
  RUNNER_ALLOW_NETWORK: bool.default(false),
  /** CIDRs network-enabled calls and package builds may reach although the egress policy refuses them (private, link-local, …). */
  RUNNER_EGRESS_ALLOW: list.default([]).pipe(
    z.array(
      z.string().refine(
        (c) => {
          try {
            parseCidr(c);
            return true;
          } catch {
            return false;
          }
        },
        { message: 'each entry must be an IP address or CIDR (10.1.0.0/16, fd00::/8)' },
      ),
    ),
  ),
  /** slirp4netns (user-mode networking of network-enabled sandboxes and package builds that reach an index). */
  RUNNER_SLIRP4NETNS: z.string().startsWith('/', 'an absolute path').default('/usr/bin/slirp4netns'),
  /** Per-call cgroups: `auto` (when delegated to the runner, else per-process limits, said at start), `required`, `off`. */
  RUNNER_CGROUPS: z.enum(['auto', 'required', 'off']).default('auto'),
  /** Ceiling on a sandbox config's memory_mb (larger values are lowered to it). */
  RUNNER_MAX_MEMORY_MB: z.coerce.number().int().min(16).default(4096),
  // Warm pool
  RUNNER_POOL_WARM: z.coerce.number().int().min(0).max(256).default(4),
  /** Network-enabled sandboxes kept ready (each serves one call); only with RUNNER_ALLOW_NETWORK. */
  RUNNER_POOL_WARM_NET: z.coerce.number().int().min(0).max(256).default(1),
  RUNNER_POOL_MAX_PER_ENV: z.coerce.number().int().min(1).max(1024).default(16),
  RUNNER_POOL_MAX_SLOTS: z.coerce.number().int().min(1).max(4096).default(64),
  RUNNER_POOL_IDLE_TTL_MS: z.coerce.number().int().min(1000).default(300_000),
  RUNNER_POOL_PRELOAD: list.default([]),
  /**
   * Environments to keep warm besides the default one, as JSON:
   * `[{"pip_requirements": ["requests==2.32.3"], "warm": 2, "network": false}]`. Each virtualenv is
   * built in the background at start-up; `warm` slots of it are kept ready like the default's.
   */
  RUNNER_POOL_WARM_ENVS: jsonEnv(
    z
      .array(
        z.strictObject({
          pip_requirements: z.array(z.string().min(1).max(256)).min(1).max(256),
          warm: z.number().int().min(1).max(256),
          network: z.boolean().optional(),
        }),
      )
      .max(32),
    '[]',
    '[{"pip_requirements": [...], "warm": N}]',
  ),
  // pip (virtualenvs per requirements hash)
  PIP_INDEX_URL: z.string().optional(),
  PIP_EXTRA_INDEX_URL: z.string().optional(),
  RUNNER_PIP_FIND_LINKS: list.default([]),
  RUNNER_PIP_NO_INDEX: bool.default(false),
  RUNNER_PIP_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
  /** pip installs wheels only (`--only-binary :all:`): no sdist build runs, unless a sandbox config sets `build_scripts`. */
  RUNNER_PIP_ONLY_BINARY: bool.default(false),
  // Environment store (virtualenvs and node_modules trees)
  /** Disk all environments may use; beyond it the least recently used ones not in use are evicted. */
  RUNNER_ENV_STORE_MAX_MB: z.coerce.number().int().min(1).default(10_240),
  /** An environment used (by any runner sharing RUNNER_WORK_ROOT) more recently than this is never evicted. */
  RUNNER_ENV_STORE_MIN_IDLE_MS: z.coerce.number().int().min(0).default(600_000),
  // Node (TypeScript/JavaScript tools; node_modules per requirements hash)
  /** Node binary bound read-only into the sandboxes of TS/JS tools (default: the runner's own, process.execPath). */
  RUNNER_NODE: z.string().startsWith('/', 'an absolute path').optional(),
  /** npm's package dir (holding bin/npm-cli.js; default: beside RUNNER_NODE, else /usr/lib/node_modules/npm). */
  RUNNER_NPM_DIR: z.string().startsWith('/', 'an absolute path').optional(),
  RUNNER_NPM_REGISTRY: z.string().optional(),
  /** Directories of package tarballs (`npm pack` output); a requirement found there installs from the file. */
  RUNNER_NPM_LOCAL_DIRS: list.default([]),
  /** Never reach a registry: requirements must be in RUNNER_NPM_LOCAL_DIRS. */
  RUNNER_NPM_OFFLINE: bool.default(false),
  RUNNER_NPM_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
  // Environment builds (pip and npm)
  /**
   * A call whose environment is being built waits at most this long for the build (and never past
   * its own timeout), then answers ENVIRONMENT_BUILDING (retryable) while the build goes on.
   */
  RUNNER_BUILD_WAIT_MS: z.coerce.number().int().min(0).default(20_000),
  /**
   * A call retries a failed build only this long after the failure (before, it answers the failure
   * at once: no build per call); an explicit prepare (tools.environment, a tool's upsert) retries at once.
   */
  RUNNER_BUILD_RETRY_MS: z.coerce.number().int().min(0).default(60_000),
  /** A CA certificate (PEM) builds trust besides the system's (a corporate proxy's or index's): pip `--cert`, npm `cafile`. */
  RUNNER_BUILD_CA_FILE: z.string().startsWith('/', 'an absolute path').optional(),
  /** HTTP(S) proxy of package builds (pip `--proxy`, npm `proxy`/`https-proxy`): their network then reaches this proxy only. Never given to tool calls. */
  RUNNER_BUILD_PROXY: z
    .string()
    .refine((u) => {
      try {
        return /^https?:$/.test(new URL(u).protocol);
      } catch {
        return false;
      }
    }, 'an http:// or https:// URL')
    .optional(),
};
export type RunnerConfig = z.infer<z.ZodObject<typeof runnerEnvShape>>;

export function loadRunnerConfig(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  return parseEnv('runner-local', runnerEnvShape, env);
}
