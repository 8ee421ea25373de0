import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { baseEnvShape, boolEnv as bool, parseEnv } from '@toolplane/platform';

const list = z.string().transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean));

export const runnerEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8084),
  /** `bwrap` (namespaces + seccomp + rlimits, the default) or `unsafe` (a plain subprocess; announced everywhere). */
  RUNNER_ISOLATION: z.enum(['bwrap', 'unsafe']).default('bwrap'),
  RUNNER_BWRAP: z.string().startsWith('/', 'an absolute path').default('/usr/bin/bwrap'),
  RUNNER_PYTHON: z.string().startsWith('/', 'an absolute path').default('/usr/bin/python3'),
  RUNNER_WORK_ROOT: z.string().startsWith('/', 'an absolute path').default(join(tmpdir(), 'toolplane-runs')),
  RUNNER_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16),
  RUNNER_STDOUT_LIMIT_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  RUNNER_STDERR_LIMIT_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  RUNNER_MAX_OUTPUT_BYTES: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
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
  RUNNER_NETWORK: bool.default(false),
  // Warm pool
  RUNNER_POOL_WARM: z.coerce.number().int().min(0).max(256).default(4),
  RUNNER_POOL_MAX_PER_ENV: z.coerce.number().int().min(1).max(1024).default(16),
  RUNNER_POOL_MAX_SLOTS: z.coerce.number().int().min(1).max(4096).default(64),
  RUNNER_POOL_IDLE_TTL_MS: z.coerce.number().int().min(1000).default(300_000),
  RUNNER_POOL_PRELOAD: list.default([]),
  // pip (virtualenvs per requirements hash)
  PIP_INDEX_URL: z.string().optional(),
  PIP_EXTRA_INDEX_URL: z.string().optional(),
  RUNNER_PIP_FIND_LINKS: list.default([]),
  RUNNER_PIP_NO_INDEX: bool.default(false),
  RUNNER_PIP_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
};
export type RunnerConfig = z.infer<z.ZodObject<typeof runnerEnvShape>>;

export function loadRunnerConfig(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  return parseEnv('runner-local', runnerEnvShape, env);
}
