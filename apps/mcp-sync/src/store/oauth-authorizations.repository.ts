import { Injectable } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, LessThan } from 'typeorm';
import { OAuthAuthorizationEntity } from './oauth-authorization.entity';

@Injectable()
export class OAuthAuthorizationsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  private get repo() {
    return this.ds.getRepository(OAuthAuthorizationEntity);
  }

  async insert(row: OAuthAuthorizationEntity): Promise<void> {
    await this.repo.delete({ expiresAt: LessThan(new Date()) });
    await this.repo.insert(row);
  }

  /**
   * Takes (reads and deletes) the org's pending authorization of this state: a state works once.
   * A state bound to an end user is taken only by that user (another's attempt leaves it in place).
   */
  take(orgId: string, state: string, userId: string | undefined): Promise<OAuthAuthorizationEntity | null> {
    return this.ds.transaction(async (m) => {
      const repo = m.getRepository(OAuthAuthorizationEntity);
      const row = await repo
        .createQueryBuilder('a')
        .setLock('pessimistic_write')
        .where('a.state = :state AND a.org_id = :orgId', { state, orgId })
        .getOne();
      if (row?.userId && row.userId !== userId)
        throw new ToolplaneError(
          ErrorCode.MCP_OAUTH_FAILED,
          'This authorization was started for another end user: only that user can complete it',
          undefined,
          false,
        );
      if (row) await repo.delete({ state });
      return row;
    });
  }
}
