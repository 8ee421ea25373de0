import 'reflect-metadata';
import {
  Logger,
  Module,
  type DynamicModule,
  type INestApplication,
  type INestMicroservice,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { connect } from '@nats-io/transport-node';
import { AuthChanged, AuthStateGet, type AppName } from '@toolplane/contracts';
import { initTelemetry, ToolplaneLogger } from '@toolplane/observability';
import {
  EdgeAuth,
  MessagingClient,
  NatsJsonServer,
  PassThroughExceptionFilter,
  TokenVerifier,
} from '@toolplane/messaging';
import type { AddressInfo } from 'node:net';
import type { BaseConfig } from './env';
import { HealthRegistry, startHealthServer } from './health';
import { natsConnectOptions, serviceIdentity } from './nats-connection';
import { PlatformModule } from './platform.module';

export interface ServiceSpec<C extends BaseConfig> {
  /** App name: service.name, service identity, NATS connection name and queue group. */
  name: AppName;
  config: C;
  module: Type | DynamicModule;
  /**
   * An HTTP face beside the NATS transport (the MCP gateway): Nest's HTTP app on express, with no
   * body parser (the app reads bodies itself, bounded), listening on host:port.
   */
  http?: { host: string; port: number };
}

export interface RunningService {
  healthPort: number;
  /** The HTTP port (ServiceSpec.http), when the app has one. */
  httpPort?: number;
  stop(): Promise<void>;
}

/**
 * Boots one app: telemetry, logs, NATS, the Nest microservice on the plain-JSON transport, health
 * endpoints, and a graceful stop on SIGTERM/SIGINT (stop taking requests, drain, exit).
 */
export async function runService<C extends BaseConfig>(spec: ServiceSpec<C>): Promise<RunningService> {
  const { name, config } = spec;
  const telemetry = initTelemetry(name, config);
  const logger = new ToolplaneLogger(name, config.LOG_FORMAT, config.LOG_LEVEL);
  Logger.overrideLogger(logger);
  const log = new Logger('Bootstrap');

  const { sealer, events } = serviceIdentity(config, name);
  const nc = await connect({
    ...natsConnectOptions(config, name),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: 5000,
    // No eager Error objects (stack captures) per request: ~0.5 ms of CPU per request otherwise.
    // Timeouts and no-responders still arrive as TimeoutError / RequestError, just without the caller's stack.
    noAsyncTraces: true,
  });
  const messaging = new MessagingClient(nc, config.SUBJECT_PREFIX, sealer, events, config.NATS_STREAM_REPLICAS);
  // Org tokens are checked here, at the edge, against state fetched (sealed) from credentials.
  const tokens = new TokenVerifier(
    (version) => messaging.request(AuthStateGet, version ? { version } : {}, { timeoutMs: 2000 }),
    {
      refreshMs: config.AUTH_REFRESH_MS,
      maxStaleMs: config.AUTH_MAX_STALE_MS,
      cacheMax: config.AUTH_TOKEN_CACHE_MAX,
    },
  );
  const authHints = messaging.onEvents([AuthChanged], (_e, p) => tokens.hint(p.version));
  const health = new HealthRegistry();
  health.common.push(() => messaging.refusedEvents.metrics());
  health.add('nats', async () => {
    if (nc.isClosed() || nc.isDraining()) throw new Error('NATS connection closed');
    await nc.flush();
  });

  @Module({ imports: [PlatformModule.register(messaging, config, health, tokens), spec.module] })
  class RootModule {}

  const strategy = new NatsJsonServer({
    nc,
    prefix: config.SUBJECT_PREFIX,
    queue: name,
    maxRequestBytes: config.MAX_REQUEST_BYTES,
    drainTimeoutMs: config.SHUTDOWN_GRACE_MS,
    auth: new EdgeAuth(sealer, tokens),
  });
  let app: INestApplication | INestMicroservice;
  let httpPort: number | undefined;
  if (spec.http) {
    const web = await NestFactory.create(RootModule, new ExpressAdapter(), {
      logger,
      bufferLogs: false,
      bodyParser: false,
    });
    web.connectMicroservice({ strategy }, { inheritAppConfig: true });
    web.useGlobalFilters(new PassThroughExceptionFilter());
    await web.startAllMicroservices();
    const server = await web.listen(spec.http.port, spec.http.host);
    httpPort = (server.address() as AddressInfo).port;
    app = web;
  } else {
    const micro = await NestFactory.createMicroservice(RootModule, { strategy, logger, bufferLogs: false });
    micro.useGlobalFilters(new PassThroughExceptionFilter());
    await micro.listen();
    app = micro;
  }
  const healthServer = await startHealthServer(health, config.HEALTH_HOST, config.HEALTH_PORT);
  const healthPort = (healthServer.address() as AddressInfo).port;
  log.log(
    `${name} ready: NATS ${config.NATS_URL}${config.SUBJECT_PREFIX ? ` (prefix ${config.SUBJECT_PREFIX})` : ''}, health on :${healthPort}${httpPort !== undefined ? `, HTTP on :${httpPort}` : ''}, traces ${telemetry.exporting ? 'exported' : 'not exported'}`,
  );

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.log(`${name} stopping: draining ${strategy.inFlightCount} in-flight request(s)`);
      health.draining = true;
      authHints.unsubscribe();
      await app.close();
      await nc.drain().catch(() => undefined);
      healthServer.close();
      await telemetry.shutdown().catch(() => undefined);
      log.log(`${name} stopped`);
    })());
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
  return { healthPort, ...(httpPort !== undefined ? { httpPort } : {}), stop };
}

/** main.ts entry: run, or print why not and exit 1. */
export function main<C extends BaseConfig>(load: () => ServiceSpec<C>): void {
  let spec: ServiceSpec<C>;
  try {
    spec = load();
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
  runService(spec).catch((e) => {
    process.stderr.write(`${spec.name} failed to start: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
