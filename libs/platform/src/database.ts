import { Inject, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions, type MixedList } from 'typeorm';
import { z } from 'zod';
import { boolEnv } from './env';
import { HealthRegistry } from './health';
import { APP_CONFIG } from './platform.module';

/** What an app that owns tables declares: its Postgres schema, entities and migrations. */
export interface OwnedSchema {
  /** The app's own Postgres schema (no app reads another's). */
  schema: string;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- TypeORM's own type for entity classes
  entities: MixedList<Function>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- TypeORM's own type for migration classes
  migrations: MixedList<Function>;
}

export const databaseEnvShape = {
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
    .default('postgres://postgres@127.0.0.1:5432/postgres'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(10),
  DB_MIGRATE_ON_START: boolEnv.default(false),
};
export interface DatabaseConfig {
  DATABASE_URL: string;
  DB_POOL_MAX: number;
  DB_MIGRATE_ON_START: boolean;
}

export function dataSourceOptions(db: OwnedSchema, url: string, poolMax: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema: db.schema,
    entities: db.entities,
    migrations: db.migrations,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    installExtensions: false,
    uuidExtension: 'pgcrypto',
    extra: { max: poolMax, connectionTimeoutMillis: 5000 },
    applicationName: `toolplane-${db.schema}`,
  } as DataSourceOptions;
}

/**
 * Creates the schema if needed and runs pending migrations, under an advisory lock so replicas
 * (or a Job and a replica) starting together do not race. Returns the names applied.
 */
export async function migrate(db: OwnedSchema, url: string): Promise<string[]> {
  const ds = new DataSource(dataSourceOptions(db, url, 2));
  await ds.initialize();
  const lock = ds.createQueryRunner();
  const key = `toolplane.${db.schema}.migrate`;
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    await ds.query(`CREATE SCHEMA IF NOT EXISTS "${db.schema}"`);
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
    await lock.release();
    await ds.destroy();
  }
}

/** CLI body for an app's `migrate.js` (npm run migrate, the Kubernetes Job). */
export function runMigrationsCli(db: OwnedSchema, url: string): void {
  migrate(db, url).then(
    (applied) =>
      process.stdout.write(applied.length ? `applied migrations: ${applied.join(', ')}\n` : 'database is up to date\n'),
    (e: Error) => {
      process.stderr.write(`migration failed: ${e.message}\n`);
      process.exit(1);
    },
  );
}

@Module({})
class DatabaseHealth implements OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    @Inject(HealthRegistry) private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.add('postgres', async () => {
      await this.ds.query('SELECT 1');
    });
  }
}

/** TypeORM for an owning app: migrations at start when configured, and a readiness check. */
export function databaseModule(db: OwnedSchema): DynamicModule {
  return {
    module: DatabaseHealth,
    imports: [
      TypeOrmModule.forRootAsync({
        inject: [APP_CONFIG],
        useFactory: async (config: DatabaseConfig) => {
          if (config.DB_MIGRATE_ON_START) await migrate(db, config.DATABASE_URL);
          return {
            ...dataSourceOptions(db, config.DATABASE_URL, config.DB_POOL_MAX),
            retryAttempts: 3,
            retryDelay: 1000,
          };
        },
      }),
    ],
  };
}
