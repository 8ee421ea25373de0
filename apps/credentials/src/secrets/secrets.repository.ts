import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In } from 'typeorm';
import { SecretEntity } from './secret.entity';

export interface SecretIdentity {
  orgId: string;
  scope: 'sandbox' | 'agent';
  agentId: string;
  provider: string;
  key: string;
}

@Injectable()
export class SecretsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * Insert, or replace the value and metadata of the secret with the same identity, and read it
   * back in the same transaction: the row lock taken by the write holds a concurrent delete of the
   * same key until this answers (it then deletes what was written, never the other way round).
   */
  upsert(id: SecretIdentity, fields: { description: string | null; mask: boolean; keyId: string; ciphertext: Buffer }): Promise<SecretEntity> {
    return this.ds.transaction(async (em) => {
      await em
        .createQueryBuilder()
        .insert()
        .into(SecretEntity)
        .values({ ...id, ...fields, updatedAt: () => 'now()' })
        .orUpdate(['description', 'mask', 'key_id', 'ciphertext', 'updated_at'], ['org_id', 'scope', 'agent_id', 'provider', 'key'])
        .execute();
      return em.getRepository(SecretEntity).findOneByOrFail({ ...id });
    });
  }

  list(orgId: string, f: { scope?: string; agentId?: string }): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).find({
      where: { orgId, ...(f.scope ? { scope: f.scope as SecretEntity['scope'] } : {}), ...(f.agentId ? { agentId: f.agentId } : {}) },
      order: { scope: 'ASC', agentId: 'ASC', key: 'ASC', provider: 'ASC' },
    });
  }

  async delete(id: SecretIdentity): Promise<boolean> {
    const r = await this.ds.getRepository(SecretEntity).delete({ ...id });
    return (r.affected ?? 0) > 0;
  }

  /** The org's sandbox-scope secrets for a provider (its own and the provider-less ones). */
  sandboxFor(orgId: string, provider: string): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).findBy({ orgId, scope: 'sandbox', agentId: '', provider: In(['', provider]) });
  }

  /** One agent's secrets for a provider (its own and the provider-less ones). */
  agentFor(orgId: string, agentId: string, provider: string): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).findBy({ orgId, scope: 'agent', agentId, provider: In(['', provider]) });
  }

  /** Org-wide secrets (scope sandbox, no agent, no provider) of these keys. */
  orgWide(orgId: string, keys: string[]): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).findBy({ orgId, scope: 'sandbox', agentId: '', provider: '', key: In(keys) });
  }
}
