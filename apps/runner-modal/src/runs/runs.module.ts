import { Logger, Module } from '@nestjs/common';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import type { ModalRunnerConfig } from '../runner-modal.config';
import { ModalSandboxes } from '../sandboxes/environments';
import { ModalApi } from '../sandboxes/modal.api';
import { ModalDriver } from '../sandboxes/modal.driver';
import { SandboxPool } from '../sandboxes/sandbox-pool';
import { RunsController } from './runs.controller';
import { ModalRunnerMetrics } from './runs.metrics';
import { RunsService } from './runs.service';

function describe(c: ModalRunnerConfig): string {
  return `Modal ${c.MODAL_SERVER_URL ?? 'https://api.modal.com:443'}; app ${c.MODAL_APP}, image ${c.MODAL_IMAGE}; up to ${c.MODAL_MAX_SANDBOXES_PER_ORG} sandbox(es) per org and ${c.MODAL_MAX_SANDBOXES} in all, ${c.MODAL_WARM_SANDBOXES} kept warm, idle TTL ${c.MODAL_IDLE_TTL_MS} ms; runner token ${c.MODAL_TOKEN_ID ? 'set' : 'not set (orgs bring their own MODAL_TOKEN_ID/MODAL_TOKEN_SECRET)'}`;
}

@Module({
  controllers: [RunsController],
  providers: [
    RunsService,
    { provide: ModalApi, inject: [APP_CONFIG], useFactory: (c: ModalRunnerConfig) => new ModalApi(c) },
    { provide: ModalSandboxes, inject: [ModalApi, APP_CONFIG], useFactory: (api: ModalApi, c: ModalRunnerConfig) => new ModalSandboxes(api, c) },
    {
      provide: SandboxPool,
      inject: [ModalSandboxes, APP_CONFIG],
      useFactory: (sandboxes: ModalSandboxes, c: ModalRunnerConfig) => {
        new Logger('ModalRunner').log(describe(c));
        return new SandboxPool(sandboxes, {
          maxPerOrg: c.MODAL_MAX_SANDBOXES_PER_ORG,
          maxTotal: c.MODAL_MAX_SANDBOXES,
          warm: c.MODAL_WARM_SANDBOXES,
          idleTtlMs: c.MODAL_IDLE_TTL_MS,
          ...(c.MODAL_REAP_INTERVAL_MS ? { reapEveryMs: c.MODAL_REAP_INTERVAL_MS } : {}),
        });
      },
    },
    { provide: ModalDriver, inject: [SandboxPool, ModalSandboxes, APP_CONFIG], useFactory: (p: SandboxPool, s: ModalSandboxes, c: ModalRunnerConfig) => new ModalDriver(p, s, c) },
    {
      provide: ModalRunnerMetrics,
      inject: [SandboxPool, HealthRegistry],
      useFactory: (pool: SandboxPool, health: HealthRegistry) => {
        const metrics = new ModalRunnerMetrics(pool);
        health.metrics = () => metrics.render();
        return metrics;
      },
    },
  ],
})
export class RunsModule {}
