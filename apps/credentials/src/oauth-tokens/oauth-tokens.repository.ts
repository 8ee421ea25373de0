import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { OAuthTokenEntity } from './oauth-token.entity';

export interface OAuthTokenRef {
  orgId: string;
  serverId: string;
  /** '' for the org's tokens. */
  userId: string;
  issuer: string;
}

const MAX_LISTED = 10_000;

@Injectable()
export class OAuthTokensRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async upsert(
    ref: OAuthTokenRef,
    sealed: { keyId: string; ciphertext: Buffer },
    shown: { scope: string | null; expiresAt: Date | null },
  ): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .insert()
      .into(OAuthTokenEntity)
      .values({ ...ref, ...sealed, ...shown, createdAt: () => 'now()', updatedAt: () => 'now()' })
      .orUpdate(
        ['key_id', 'ciphertext', 'scope', 'expires_at', 'updated_at'],
        ['org_id', 'server_id', 'user_id', 'issuer'],
      )
      .execute();
  }

  find(ref: OAuthTokenRef): Promise<OAuthTokenEntity | null> {
    return this.ds.getRepository(OAuthTokenEntity).findOneBy({ ...ref });
  }

  /** Every record of the server (all users'), or only one user's ('' the org's). */
  async deleteForServer(orgId: string, serverId: string, userId?: string): Promise<number> {
    const r = await this.ds
      .getRepository(OAuthTokenEntity)
      .delete({ orgId, serverId, ...(userId !== undefined ? { userId } : {}) });
    return r.affected ?? 0;
  }

  /** The org's records, without their ciphertext. */
  list(
    orgId: string,
    filter: { serverId?: string; userId?: string; usersOnly?: boolean },
  ): Promise<Array<Omit<OAuthTokenEntity, 'ciphertext' | 'keyId'>>> {
    const q = this.ds
      .getRepository(OAuthTokenEntity)
      .createQueryBuilder('t')
      .select(['t.orgId', 't.serverId', 't.userId', 't.issuer', 't.scope', 't.expiresAt', 't.createdAt', 't.updatedAt'])
      .where('t.org_id = :orgId', { orgId });
    if (filter.serverId !== undefined) q.andWhere('t.server_id = :serverId', { serverId: filter.serverId });
    if (filter.userId !== undefined) q.andWhere('t.user_id = :userId', { userId: filter.userId });
    if (filter.usersOnly) q.andWhere("t.user_id <> ''");
    return q.orderBy('t.server_id').addOrderBy('t.user_id').take(MAX_LISTED).getMany();
  }
}
