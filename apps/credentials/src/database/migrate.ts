import { runMigrationsCli } from '@toolplane/platform';
import { loadCredentialsConfig } from '../credentials.config';
import { CREDENTIALS_DB } from './data-source';

/**
 * `npm run migrate` and the Kubernetes migration Job: apply pending credentials migrations, then
 * exit. Migrations need no encryption keys, so the key-ring requirement is not applied here.
 */
runMigrationsCli(CREDENTIALS_DB, loadCredentialsConfig(undefined, { requireKeys: false }).DATABASE_URL);
