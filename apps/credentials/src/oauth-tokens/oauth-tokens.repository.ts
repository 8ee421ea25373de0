import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { OAuthTokenEntity } from './oauth-token.entity';

export interface OAuthTokenRef {
  orgId: string;
  serverId: string;
  issuer: string;
}

@Injectable()
export class OAuthTokensRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async upsert(ref: OAuthTokenRef, sealed: { keyId: string; ciphertext: Buffer }): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .insert()
      .into(OAuthTokenEntity)
      .values({ ...ref, ...sealed, updatedAt: () => 'now()' })
      .orUpdate(['key_id', 'ciphertext', 'updated_at'], ['org_id', 'server_id', 'issuer'])
      .execute();
  }

  find(ref: OAuthTokenRef): Promise<OAuthTokenEntity | null> {
    return this.ds.getRepository(OAuthTokenEntity).findOneBy({ ...ref });
  }

  async deleteForServer(orgId: string, serverId: string): Promise<number> {
    const r = await this.ds.getRepository(OAuthTokenEntity).delete({ orgId, serverId });
    return r.affected ?? 0;
  }
}
