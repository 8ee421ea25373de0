import { Module } from '@nestjs/common';
import { remoteRunsModule } from '@toolplane/remote-runner';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { E2bApi } from '../sandboxes/e2b.api';
import { E2bProvider } from '../sandboxes/e2b.provider';

/** runner-e2b: the remote-runner core (pool, driver, runs service, metrics) over the E2B provider adapter. */
@Module(
  remoteRunsModule<E2bRunnerConfig>({
    name: 'e2b',
    provider: (c) => new E2bProvider(new E2bApi(c), c),
    pool: (c) => ({
      maxTotal: c.E2B_MAX_SANDBOXES,
      maxPerOrg: c.E2B_MAX_SANDBOXES_PER_ORG,
      warm: 0,
      idleTtlMs: c.E2B_IDLE_TTL_MS,
      buildRetryMs: c.E2B_BUILD_RETRY_MS,
    }),
    limits: (c) => ({
      stdoutLimitBytes: c.E2B_STDOUT_LIMIT_BYTES,
      stderrLimitBytes: c.E2B_STDERR_LIMIT_BYTES,
      maxOutputBytes: c.E2B_MAX_OUTPUT_BYTES,
      commandGraceMs: c.E2B_COMMAND_GRACE_MS,
    }),
    settings: (c) => ({
      maxConcurrency: c.E2B_MAX_CONCURRENCY,
      maxConcurrencyPerOrg: c.E2B_MAX_CONCURRENCY_PER_ORG,
      buildWaitMs: c.E2B_BUILD_WAIT_MS,
      stdoutLimitBytes: c.E2B_STDOUT_LIMIT_BYTES,
      stderrLimitBytes: c.E2B_STDERR_LIMIT_BYTES,
    }),
    describe: (c) => {
      const where = c.E2B_API_URL
        ? `E2B API ${c.E2B_API_URL}${c.E2B_SANDBOX_URL ? `, sandboxes via ${c.E2B_SANDBOX_URL}` : ''}`
        : `E2B ${c.E2B_DOMAIN ?? 'e2b.app'}`;
      return `${where}; template ${c.E2B_TEMPLATE}; up to ${c.E2B_MAX_SANDBOXES_PER_ORG} sandbox(es) per org and ${c.E2B_MAX_SANDBOXES} in all, idle TTL ${c.E2B_IDLE_TTL_MS} ms; runner key ${c.E2B_API_KEY ? 'set' : 'not set (orgs bring their own E2B_API_KEY)'}`;
    },
  }),
)
export class RunsModule {}
