import { runMigrationsCli } from '@toolplane/platform';
import { loadExecutorConfig } from '../executor.config';
import { EXECUTOR_DB } from './data-source';

/** `npm run migrate` and the executor's migration init container: apply pending migrations, then exit. */
runMigrationsCli(EXECUTOR_DB, loadExecutorConfig().DATABASE_URL);
