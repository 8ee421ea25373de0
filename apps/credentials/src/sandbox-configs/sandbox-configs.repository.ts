import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { SandboxConfigEntity } from './sandbox-config.entity';

@Injectable()
export class SandboxConfigsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async upsert(orgId: string, provider: string, config: Record<string, unknown>): Promise<SandboxConfigEntity> {
    await this.ds
      .createQueryBuilder()
      .insert()
      .into(SandboxConfigEntity)
      .values({ orgId, provider, config: config as never, updatedAt: () => 'now()' })
      .orUpdate(['config', 'updated_at'], ['org_id', 'provider'])
      .execute();
    return this.ds.getRepository(SandboxConfigEntity).findOneByOrFail({ orgId, provider });
  }

  find(orgId: string, provider: string): Promise<SandboxConfigEntity | null> {
    return this.ds.getRepository(SandboxConfigEntity).findOneBy({ orgId, provider });
  }

  list(orgId: string): Promise<SandboxConfigEntity[]> {
    return this.ds.getRepository(SandboxConfigEntity).find({ where: { orgId }, order: { provider: 'ASC' } });
  }
}
