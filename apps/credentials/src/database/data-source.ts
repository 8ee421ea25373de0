import type { OwnedSchema } from '@toolplane/platform';
import { AuthTokenEntity } from '../auth/auth-token.entity';
import { OAuthTokenEntity } from '../oauth-tokens/oauth-token.entity';
import { SandboxConfigEntity } from '../sandbox-configs/sandbox-config.entity';
import { SecretEntity } from '../secrets/secret.entity';
import { WebhookEntity } from '../webhooks/webhook.entity';
import { CreateCredentials1764000000000 } from './migrations/1764000000000-create-credentials';
import { CreateOAuthTokens1764200000000 } from './migrations/1764200000000-create-oauth-tokens';
import { CreateAuthTokens1764300000000 } from './migrations/1764300000000-create-auth-tokens';
import { EndUserSecretsAndTokens1764500000000 } from './migrations/1764500000000-end-user-secrets-and-tokens';
import { AddOAuthTokenUsers1764700000000 } from './migrations/1764700000000-add-oauth-token-users';

/** The credentials app owns the `credentials` schema and nothing else. */
export const CREDENTIALS_DB: OwnedSchema = {
  schema: 'credentials',
  entities: [SecretEntity, WebhookEntity, SandboxConfigEntity, OAuthTokenEntity, AuthTokenEntity],
  migrations: [
    CreateCredentials1764000000000,
    CreateOAuthTokens1764200000000,
    CreateAuthTokens1764300000000,
    EndUserSecretsAndTokens1764500000000,
    AddOAuthTokenUsers1764700000000,
  ],
};
