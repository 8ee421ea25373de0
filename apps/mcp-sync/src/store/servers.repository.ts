import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import { McpServerEntity, type LastSync, type PendingAuthorization } from './mcp-server.entity';

export type ServerFields = Partial<Omit<McpServerEntity, 'id' | 'orgId' | 'createdAt' | 'updatedAt'>>;

const UNIQUE_VIOLATION = '23505';

export class DuplicateServerName extends Error {}

@Injectable()
export class ServersRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  private get repo() {
    return this.ds.getRepository(McpServerEntity);
  }

  findById(orgId: string, id: string): Promise<McpServerEntity | null> {
    return this.repo.findOneBy({ orgId, id });
  }

  findByName(orgId: string, name: string): Promise<McpServerEntity | null> {
    return this.repo.findOneBy({ orgId, name });
  }

  listByOrg(orgId: string): Promise<McpServerEntity[]> {
    return this.repo.find({ where: { orgId }, order: { name: 'ASC' } });
  }

  /** Throws DuplicateServerName when the org already has a server of that name. */
  async insert(row: ServerFields & { id: string; orgId: string; name: string }): Promise<McpServerEntity> {
    try {
      await this.repo.insert(row as QueryDeepPartialEntity<McpServerEntity>);
    } catch (e) {
      if ((e as { code?: string }).code === UNIQUE_VIOLATION) throw new DuplicateServerName(row.name);
      throw e;
    }
    return this.repo.findOneByOrFail({ id: row.id });
  }

  async update(id: string, fields: ServerFields): Promise<McpServerEntity> {
    await this.repo.update({ id }, { ...fields, updatedAt: () => 'now()' } as QueryDeepPartialEntity<McpServerEntity>);
    return this.repo.findOneByOrFail({ id });
  }

  /** Every stored server (the sealed-secrets sweep). */
  listAll(): Promise<McpServerEntity[]> {
    return this.repo.find({ order: { id: 'ASC' } });
  }

  /** The authorization an OAuth server waits for (null: none). */
  async setPendingAuthorization(id: string, pending: PendingAuthorization | null): Promise<void> {
    await this.repo.update({ id }, { pendingAuthorization: pending } as QueryDeepPartialEntity<McpServerEntity>);
  }

  /** New sealed secrets without a settings change (what an OAuth flow learned): the server's version stays. */
  async keepSecrets(id: string, sealedSecrets: Buffer): Promise<void> {
    await this.repo.update({ id }, { sealedSecrets } as QueryDeepPartialEntity<McpServerEntity>);
  }

  async recordSync(id: string, lastSync: LastSync, toolCount?: number): Promise<McpServerEntity | null> {
    await this.repo.update({ id }, {
      lastSync,
      ...(toolCount !== undefined ? { toolCount } : {}),
    } as QueryDeepPartialEntity<McpServerEntity>);
    return this.repo.findOneBy({ id });
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }

  /** Puts a deleted row back as it was (a removal that could not finish). */
  async restore(row: McpServerEntity): Promise<void> {
    await this.repo.insert(row as QueryDeepPartialEntity<McpServerEntity>);
  }

  /**
   * Claims up to `limit` servers whose resync is due and pushes their next one `nextInMs(server)`
   * ahead, in one statement: replicas never claim the same server twice.
   */
  async claimDue(limit: number, nextInMs: () => number): Promise<McpServerEntity[]> {
    return this.ds.transaction(async (m) => {
      const due = await m
        .getRepository(McpServerEntity)
        .createQueryBuilder('s')
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .where('s.next_sync_at <= now()')
        .orderBy('s.next_sync_at', 'ASC')
        .limit(limit)
        .getMany();
      for (const s of due) {
        await m.getRepository(McpServerEntity).update({ id: s.id }, {
          nextSyncAt: () => `now() + interval '${Math.max(0, Math.round(nextInMs()))} milliseconds'`,
        } as QueryDeepPartialEntity<McpServerEntity>);
      }
      return due;
    });
  }
}
