import { runMigrationsCli } from '@toolplane/platform';
import { loadRegistryConfig } from '../registry.config';
import { REGISTRY_DB } from './data-source';

/** `npm run migrate` and the Kubernetes migration Job: apply pending migrations, then exit. */
runMigrationsCli(REGISTRY_DB, loadRegistryConfig().DATABASE_URL);
