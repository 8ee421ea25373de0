import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CredentialsCacheModule } from './cache/credentials-cache';
import { CryptoModule } from './crypto/crypto.module';
import { databaseModule } from '@toolplane/platform';
import { CREDENTIALS_DB } from './database/data-source';
import { EnvResolutionModule } from './env-resolution/env-resolution.module';
import { OAuthTokensModule } from './oauth-tokens/oauth-tokens.module';
import { SealedValuesModule } from './sealed-values/sealed-values.controller';
import { OrgSecretsModule } from './org-secrets/org-secrets.module';
import { SandboxConfigsModule } from './sandbox-configs/sandbox-configs.module';
import { SecretsModule } from './secrets/secrets.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [
    CryptoModule,
    CredentialsCacheModule,
    databaseModule(CREDENTIALS_DB),
    SecretsModule,
    WebhooksModule,
    SandboxConfigsModule,
    EnvResolutionModule,
    OrgSecretsModule,
    OAuthTokensModule,
    SealedValuesModule,
    AuthModule,
  ],
})
export class CredentialsModule {}
