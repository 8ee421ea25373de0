import { Global, Module } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import type { CredentialsConfig } from '../credentials.config';
import { loadKeyRing } from './key-ring';
import { SecretBox } from './secret-box';

/** The key ring, loaded once at start (a missing or malformed key stops the app). */
@Global()
@Module({
  providers: [{ provide: SecretBox, inject: [APP_CONFIG], useFactory: (config: CredentialsConfig) => new SecretBox(loadKeyRing(config)) }],
  exports: [SecretBox],
})
export class CryptoModule {}
