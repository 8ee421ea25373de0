import { DataSource, type DataSourceOptions } from 'typeorm';
import { ToolEntity } from '../tools/tool.entity';
import { CreateTools1763880000000 } from './migrations/1763880000000-create-tools';

/** The registry owns the `registry` schema and nothing else. */
export const REGISTRY_SCHEMA = 'registry';

export function dataSourceOptions(url: string, poolMax: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema: REGISTRY_SCHEMA,
    entities: [ToolEntity],
    migrations: [CreateTools1763880000000],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    installExtensions: false,
    uuidExtension: 'pgcrypto',
    extra: { max: poolMax, connectionTimeoutMillis: 5000 },
    applicationName: 'toolplane-registry',
  } as DataSourceOptions;
}

/** Creates the schema if needed and runs pending migrations. Returns the names applied. */
export async function migrate(url: string): Promise<string[]> {
  const ds = new DataSource(dataSourceOptions(url, 1));
  await ds.initialize();
  try {
    await ds.query(`CREATE SCHEMA IF NOT EXISTS ${REGISTRY_SCHEMA}`);
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}
