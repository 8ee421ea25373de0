import { Global, Module, type DynamicModule } from '@nestjs/common';
import { MessagingClient } from '@toolplane/messaging';
import { HealthRegistry } from './health';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Gives every app module the shared NATS client, its parsed config and the health registry. */
@Global()
@Module({})
export class PlatformModule {
  static register(messaging: MessagingClient, config: unknown, health: HealthRegistry): DynamicModule {
    return {
      module: PlatformModule,
      providers: [
        { provide: MessagingClient, useValue: messaging },
        { provide: APP_CONFIG, useValue: config },
        { provide: HealthRegistry, useValue: health },
      ],
      exports: [MessagingClient, APP_CONFIG, HealthRegistry],
    };
  }
}
