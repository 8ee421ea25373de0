import { loadRegistryConfig } from '../registry.config';
import { migrate } from './data-source';

/** `npm run migrate` and the Kubernetes migration Job: apply pending migrations, then exit. */
async function run(): Promise<void> {
  const config = loadRegistryConfig();
  const applied = await migrate(config.DATABASE_URL);
  process.stdout.write(applied.length ? `applied migrations: ${applied.join(', ')}\n` : 'database is up to date\n');
}

run().catch((e) => {
  process.stderr.write(`migration failed: ${(e as Error).message}\n`);
  process.exit(1);
});
