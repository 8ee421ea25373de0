import { Logger, Module } from '@nestjs/common';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { E2bApi } from '../sandboxes/e2b.api';
import { E2bDriver } from '../sandboxes/e2b.driver';
import { E2bSandboxes } from '../sandboxes/environments';
import { SandboxPool } from '../sandboxes/sandbox-pool';
import { RunsController } from './runs.controller';
import { E2bRunnerMetrics } from './runs.metrics';
import { RunsService } from './runs.service';

function describe(c: E2bRunnerConfig): string {
  const where = c.E2B_API_URL ? `E2B API ${c.E2B_API_URL}${c.E2B_SANDBOX_URL ? `, sandboxes via ${c.E2B_SANDBOX_URL}` : ''}` : `E2B ${c.E2B_DOMAIN ?? 'e2b.app'}`;
  return `${where}; template ${c.E2B_TEMPLATE}; up to ${c.E2B_MAX_SANDBOXES_PER_ORG} sandbox(es) per org and ${c.E2B_MAX_SANDBOXES} in all, idle TTL ${c.E2B_IDLE_TTL_MS} ms; runner key ${c.E2B_API_KEY ? 'set' : 'not set (orgs bring their own E2B_API_KEY)'}`;
}

@Module({
  controllers: [RunsController],
  providers: [
    RunsService,
    { provide: E2bApi, inject: [APP_CONFIG], useFactory: (c: E2bRunnerConfig) => new E2bApi(c) },
    { provide: E2bSandboxes, inject: [E2bApi, APP_CONFIG], useFactory: (api: E2bApi, c: E2bRunnerConfig) => new E2bSandboxes(api, c) },
    {
      provide: SandboxPool,
      inject: [E2bSandboxes, APP_CONFIG],
      useFactory: (sandboxes: E2bSandboxes, c: E2bRunnerConfig) => {
        new Logger('E2bRunner').log(describe(c));
        return new SandboxPool(sandboxes, { maxTotal: c.E2B_MAX_SANDBOXES, maxPerOrg: c.E2B_MAX_SANDBOXES_PER_ORG, idleTtlMs: c.E2B_IDLE_TTL_MS, buildRetryMs: c.E2B_BUILD_RETRY_MS });
      },
    },
    { provide: E2bDriver, inject: [SandboxPool, E2bSandboxes, APP_CONFIG], useFactory: (p: SandboxPool, s: E2bSandboxes, c: E2bRunnerConfig) => new E2bDriver(p, s, c) },
    {
      provide: E2bRunnerMetrics,
      inject: [SandboxPool, HealthRegistry],
      useFactory: (pool: SandboxPool, health: HealthRegistry) => {
        const metrics = new E2bRunnerMetrics(pool);
        health.metrics = () => metrics.render();
        return metrics;
      },
    },
  ],
})
export class RunsModule {}
