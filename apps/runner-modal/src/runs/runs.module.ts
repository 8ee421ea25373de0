import { Module } from '@nestjs/common';
import { remoteRunsModule } from '@toolplane/remote-runner';
import type { ModalRunnerConfig } from '../runner-modal.config';
import { ModalApi } from '../sandboxes/modal.api';
import { ModalProvider } from '../sandboxes/modal.provider';

/** A failed image build stays the calls' answer this long (a prepare always tries again); E2B's is E2B_BUILD_RETRY_MS. */
const BUILD_RETRY_MS = 30_000;

/** runner-modal: the remote-runner core (pool, driver, runs service, metrics) over the Modal provider adapter. */
@Module(
  remoteRunsModule<ModalRunnerConfig>({
    name: 'modal',
    provider: (c) => new ModalProvider(new ModalApi(c), c),
    pool: (c) => ({
      maxPerOrg: c.MODAL_MAX_SANDBOXES_PER_ORG,
      maxTotal: c.MODAL_MAX_SANDBOXES,
      warm: c.MODAL_WARM_SANDBOXES,
      idleTtlMs: c.MODAL_IDLE_TTL_MS,
      buildRetryMs: BUILD_RETRY_MS,
      ...(c.MODAL_REAP_INTERVAL_MS ? { reapEveryMs: c.MODAL_REAP_INTERVAL_MS } : {}),
    }),
    limits: (c) => ({
      stdoutLimitBytes: c.MODAL_STDOUT_LIMIT_BYTES,
      stderrLimitBytes: c.MODAL_STDERR_LIMIT_BYTES,
      maxOutputBytes: c.MODAL_MAX_OUTPUT_BYTES,
      commandGraceMs: c.MODAL_COMMAND_GRACE_MS,
    }),
    settings: (c) => ({
      maxConcurrency: c.MODAL_MAX_CONCURRENCY,
      maxConcurrencyPerOrg: c.MODAL_MAX_CONCURRENCY_PER_ORG,
      buildWaitMs: c.MODAL_BUILD_WAIT_MS,
      stdoutLimitBytes: c.MODAL_STDOUT_LIMIT_BYTES,
      stderrLimitBytes: c.MODAL_STDERR_LIMIT_BYTES,
    }),
    describe: (c) =>
      `Modal ${c.MODAL_SERVER_URL ?? 'https://api.modal.com:443'}; app ${c.MODAL_APP}, image ${c.MODAL_IMAGE}; up to ${c.MODAL_MAX_SANDBOXES_PER_ORG} sandbox(es) per org and ${c.MODAL_MAX_SANDBOXES} in all, ${c.MODAL_WARM_SANDBOXES} kept warm, idle TTL ${c.MODAL_IDLE_TTL_MS} ms; runner token ${c.MODAL_TOKEN_ID ? 'set' : 'not set (orgs bring their own MODAL_TOKEN_ID/MODAL_TOKEN_SECRET)'}`,
  }),
)
export class RunsModule {}
