import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { baseEnvShape, parseEnv } from '@toolplane/platform';

export const runnerEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8084),
  RUNNER_PYTHON: z.string().startsWith('/', 'an absolute path').default('/usr/bin/python3'),
  RUNNER_WORK_ROOT: z.string().startsWith('/', 'an absolute path').default(join(tmpdir(), 'toolplane-runs')),
  RUNNER_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(8),
  RUNNER_STDOUT_LIMIT_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  RUNNER_STDERR_LIMIT_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  RUNNER_MAX_OUTPUT_BYTES: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
  /** Unprivileged uid/gid for tool processes when the runner itself runs as root. */
  RUNNER_RUN_AS_UID: z.coerce.number().int().min(1).default(65534),
  RUNNER_RUN_AS_GID: z.coerce.number().int().min(1).default(65534),
};
export type RunnerConfig = z.infer<z.ZodObject<typeof runnerEnvShape>>;

export function loadRunnerConfig(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  return parseEnv('runner-local', runnerEnvShape, env);
}
