import { Global, Module } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import type { CredentialsConfig } from '../credentials.config';
import { KEY_RING, loadKeyRing, type KeyRing } from './key-ring';
import { SecretBox } from './secret-box';

/** The key ring, loaded once at start (a missing or malformed key stops the app). */
@Global()
@Module({
  providers: [
    { provide: KEY_RING, inject: [APP_CONFIG], useFactory: (config: CredentialsConfig) => loadKeyRing(config) },
    { provide: SecretBox, inject: [KEY_RING], useFactory: (ring: KeyRing) => new SecretBox(ring) },
  ],
  exports: [KEY_RING, SecretBox],
})
export class CryptoModule {}
