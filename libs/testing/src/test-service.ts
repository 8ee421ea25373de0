import { Module, type InjectionToken, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { APP_CONFIG } from '@toolplane/platform';

export interface TestService<T> {
  /** The service under test, built by Nest with its edges replaced. */
  service: T;
  /** Another provider of the test module (e.g. a collaborator that is real). */
  get<U>(token: InjectionToken<U>): U;
  /** Runs the module's destroy hooks. */
  close(): Promise<void>;
}

export interface TestServiceOptions {
  /** The app's config as its schema would parse it (APP_CONFIG). */
  config?: unknown;
  /** Edges: a token and the typed fake that stands for it (a repository, the messaging client, a clock). */
  edges?: Array<{ provide: InjectionToken; useValue: unknown }>;
  /** Real collaborators built beside the service. */
  providers?: Type[];
}

/**
 * One service of an app, alone: Nest builds it with its real dependency injection and lifecycle
 * hooks (onModuleInit subscribes to events, onModuleDestroy stops), its edges replaced by fakes —
 * no NATS, no Postgres, no other service — so a behaviour change needs no whole stack to test.
 */
export async function newTestService<T>(service: Type<T>, opts: TestServiceOptions = {}): Promise<TestService<T>> {
  const providers = [
    service,
    ...(opts.providers ?? []),
    ...(opts.edges ?? []),
    ...(opts.config !== undefined ? [{ provide: APP_CONFIG, useValue: opts.config }] : []),
  ];
  @Module({ providers })
  class TestModule {}
  const app = await NestFactory.createApplicationContext(TestModule, { logger: false, abortOnError: false });
  await app.init();
  return {
    service: app.get(service),
    get: <U>(token: InjectionToken<U>) => app.get<U>(token as never),
    close: () => app.close(),
  };
}
