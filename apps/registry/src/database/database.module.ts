import { Module, type OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import { DataSource } from 'typeorm';
import type { RegistryConfig } from '../registry.config';
import { dataSourceOptions, migrate } from './data-source';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: async (config: RegistryConfig) => {
        if (config.DB_MIGRATE_ON_START) await migrate(config.DATABASE_URL);
        return { ...dataSourceOptions(config.DATABASE_URL, config.DB_POOL_MAX), retryAttempts: 3, retryDelay: 1000 };
      },
    }),
  ],
})
export class DatabaseModule implements OnModuleInit {
  constructor(
    private readonly ds: DataSource,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.add('postgres', async () => {
      await this.ds.query('SELECT 1');
    });
  }
}
