import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { WebhookEntity } from './webhook.entity';

@Injectable()
export class WebhooksRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Insert or replace, read back in the same transaction (a concurrent delete waits for it: see SecretsRepository.upsert). */
  upsert(fields: Omit<WebhookEntity, 'createdAt' | 'updatedAt'>): Promise<WebhookEntity> {
    return this.ds.transaction(async (em) => {
      await em
        .createQueryBuilder()
        .insert()
        .into(WebhookEntity)
        .values({ ...fields, updatedAt: () => 'now()' })
        .orUpdate(
          ['url', 'timeout_ms', 'fail_mode', 'cache_ttl_ms', 'key_id', 'signing_secret', 'updated_at'],
          ['org_id'],
        )
        .execute();
      return em.getRepository(WebhookEntity).findOneByOrFail({ orgId: fields.orgId });
    });
  }

  find(orgId: string): Promise<WebhookEntity | null> {
    return this.ds.getRepository(WebhookEntity).findOneBy({ orgId });
  }

  async delete(orgId: string): Promise<boolean> {
    const r = await this.ds.getRepository(WebhookEntity).delete({ orgId });
    return (r.affected ?? 0) > 0;
  }
}
