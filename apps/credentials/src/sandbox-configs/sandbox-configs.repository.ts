import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { SandboxConfigEntity } from './sandbox-config.entity';

@Injectable()
export class SandboxConfigsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Creates or replaces the config; `onlyDefault`: the others of the org lose their `default` mark, atomically. */
  async upsert(
    orgId: string,
    provider: string,
    config: Record<string, unknown>,
    onlyDefault = false,
  ): Promise<SandboxConfigEntity> {
    return this.ds.transaction(async (em) => {
      await em
        .createQueryBuilder()
        .insert()
        .into(SandboxConfigEntity)
        .values({ orgId, provider, config: config as never, updatedAt: () => 'now()' })
        .orUpdate(['config', 'updated_at'], ['org_id', 'provider'])
        .execute();
      if (onlyDefault) {
        await em.query(
          `UPDATE credentials.sandbox_configs SET config = config - 'default', updated_at = now() WHERE org_id = $1 AND provider <> $2 AND config ? 'default'`,
          [orgId, provider],
        );
      }
      return em.getRepository(SandboxConfigEntity).findOneByOrFail({ orgId, provider });
    });
  }

  find(orgId: string, provider: string): Promise<SandboxConfigEntity | null> {
    return this.ds.getRepository(SandboxConfigEntity).findOneBy({ orgId, provider });
  }

  list(orgId: string): Promise<SandboxConfigEntity[]> {
    return this.ds.getRepository(SandboxConfigEntity).find({ where: { orgId }, order: { provider: 'ASC' } });
  }
}
