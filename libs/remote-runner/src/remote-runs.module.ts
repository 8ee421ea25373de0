import { Controller, Inject, Logger, type ModuleMetadata, type Type } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { RUNNERS, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import { RemoteDriver, type RemoteCallLimits } from './remote-driver';
import { RemotePool, type RemotePoolOptions } from './remote-pool';
import type { RemoteEnvironmentRequest, RemoteProvider, RemoteProviderName } from './remote-provider';
import { RemoteRunnerMetrics } from './remote-runs.metrics';
import { RemoteRunsService, type RemoteRunsSettings } from './remote-runs.service';

/** What a remote runner app gives the core, from its config: its provider adapter and its numbers. */
export interface RemoteRunnerWiring<C> {
  name: RemoteProviderName;
  provider(c: C): RemoteProvider<any, any>;
  pool(c: C): RemotePoolOptions;
  limits(c: C): RemoteCallLimits;
  settings(c: C): RemoteRunsSettings;
  /** One line at start-up: where the provider is and the bounds. */
  describe(c: C): string;
}

type Run = (typeof RUNNERS)['e2b']['run'];
type Environment = (typeof RUNNERS)['e2b']['environment'];

/** The controller of a remote runner: its run and environment subjects (the provider's descriptors) to the runs service. */
export function remoteRunsController(name: RemoteProviderName): Type<unknown> {
  const { run, environment } = RUNNERS[name];
  @Controller()
  class RunsController {
    constructor(
      @Inject(RemoteRunsService) private readonly runs: RemoteRunsService<RemoteEnvironmentRequest, unknown>,
    ) {}

    @Handles(run)
    run(@Payload() req: RequestOf<Run>): Promise<ReplyOf<Run>> {
      return this.runs.run(req);
    }

    @Handles(environment)
    environment(@Payload() req: RequestOf<Environment>): ReplyOf<Environment> {
      return this.runs.environment(req);
    }
  }
  return RunsController;
}

/** The runs module of a remote runner: the core's pool, driver, runs service and metrics over the app's provider adapter. */
export function remoteRunsModule<C>(w: RemoteRunnerWiring<C>): ModuleMetadata {
  return {
    controllers: [remoteRunsController(w.name)],
    providers: [
      {
        provide: RemotePool,
        inject: [APP_CONFIG],
        useFactory: (c: C) => {
          new Logger(`${w.name === 'e2b' ? 'E2b' : 'Modal'}Runner`).log(w.describe(c));
          return new RemotePool(w.provider(c), w.pool(c));
        },
      },
      {
        provide: RemoteRunnerMetrics,
        inject: [RemotePool, HealthRegistry],
        useFactory: (pool: RemotePool<RemoteEnvironmentRequest, unknown>, health: HealthRegistry) => {
          const metrics = new RemoteRunnerMetrics(pool.provider, pool);
          health.metrics = () => metrics.render();
          return metrics;
        },
      },
      {
        provide: RemoteRunsService,
        inject: [RemotePool, RemoteRunnerMetrics, MessagingClient, APP_CONFIG],
        useFactory: (
          pool: RemotePool<RemoteEnvironmentRequest, unknown>,
          metrics: RemoteRunnerMetrics,
          messaging: MessagingClient,
          c: C,
        ) =>
          new RemoteRunsService(
            pool.provider,
            pool,
            new RemoteDriver(pool.provider, pool, w.limits(c)),
            w.settings(c),
            metrics,
            messaging,
          ),
      },
    ],
  };
}
