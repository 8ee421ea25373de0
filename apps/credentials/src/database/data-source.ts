import type { OwnedSchema } from '@toolplane/platform';
import { SandboxConfigEntity } from '../sandbox-configs/sandbox-config.entity';
import { SecretEntity } from '../secrets/secret.entity';
import { WebhookEntity } from '../webhooks/webhook.entity';
import { CreateCredentials1764000000000 } from './migrations/1764000000000-create-credentials';

/** The credentials app owns the `credentials` schema and nothing else. */
export const CREDENTIALS_DB: OwnedSchema = {
  schema: 'credentials',
  entities: [SecretEntity, WebhookEntity, SandboxConfigEntity],
  migrations: [CreateCredentials1764000000000],
};
