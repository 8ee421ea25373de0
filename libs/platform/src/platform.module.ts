import { Global, Module, type DynamicModule } from '@nestjs/common';
import { MessagingClient, TokenVerifier } from '@toolplane/messaging';
import { HealthRegistry } from './health';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Gives every app module the shared NATS client, its parsed config, the health registry and the org token verifier of its edge. */
@Global()
@Module({})
export class PlatformModule {
  static register(
    messaging: MessagingClient,
    config: unknown,
    health: HealthRegistry,
    tokens: TokenVerifier,
  ): DynamicModule {
    return {
      module: PlatformModule,
      providers: [
        { provide: MessagingClient, useValue: messaging },
        { provide: APP_CONFIG, useValue: config },
        { provide: HealthRegistry, useValue: health },
        { provide: TokenVerifier, useValue: tokens },
      ],
      exports: [MessagingClient, APP_CONFIG, HealthRegistry, TokenVerifier],
    };
  }
}
