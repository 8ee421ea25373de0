import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In } from 'typeorm';
import { SecretEntity } from './secret.entity';

export interface SecretIdentity {
  orgId: string;
  scope: 'sandbox' | 'agent' | 'user';
  agentId: string;
  userId: string;
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
  upsert(
    id: SecretIdentity,
    fields: { description: string | null; mask: boolean; keyId: string; ciphertext: Buffer },
  ): Promise<SecretEntity> {
    return this.ds.transaction(async (em) => {
      await em
        .createQueryBuilder()
        .insert()
        .into(SecretEntity)
        .values({ ...id, ...fields, updatedAt: () => 'now()' })
        .orUpdate(
          ['description', 'mask', 'key_id', 'ciphertext', 'updated_at'],
          ['org_id', 'scope', 'agent_id', 'user_id', 'provider', 'key'],
        )
        .execute();
      return em.getRepository(SecretEntity).findOneByOrFail({ ...id });
    });
  }

  list(orgId: string, f: { scope?: string; agentId?: string; userId?: string }): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).find({
      where: {
        orgId,
        ...(f.scope ? { scope: f.scope as SecretEntity['scope'] } : {}),
        ...(f.agentId ? { agentId: f.agentId } : {}),
        ...(f.userId ? { userId: f.userId } : {}),
      },
      order: { scope: 'ASC', agentId: 'ASC', userId: 'ASC', key: 'ASC', provider: 'ASC' },
    });
  }

  async delete(id: SecretIdentity): Promise<boolean> {
    const r = await this.ds.getRepository(SecretEntity).delete({ ...id });
    return (r.affected ?? 0) > 0;
  }

  /** The org's sandbox-scope secrets for a provider (its own and the provider-less ones). */
  sandboxFor(orgId: string, provider: string): Promise<SecretEntity[]> {
    return this.ds
      .getRepository(SecretEntity)
      .findBy({ orgId, scope: 'sandbox', agentId: '', provider: In(['', provider]) });
  }

  /** One agent's secrets for a provider (its own and the provider-less ones). */
  agentFor(orgId: string, agentId: string, provider: string): Promise<SecretEntity[]> {
    return this.ds.getRepository(SecretEntity).findBy({ orgId, scope: 'agent', agentId, provider: In(['', provider]) });
  }

  /** One end user's secrets for a provider (their own and the provider-less ones). */
  userFor(orgId: string, userId: string, provider: string): Promise<SecretEntity[]> {
    return this.ds
      .getRepository(SecretEntity)
      .findBy({ orgId, scope: 'user', agentId: '', userId, provider: In(['', provider]) });
  }

  /**
   * Provider-less secrets of these keys: the org-wide ones (scope sandbox, no agent), and the
   * agent's and the user's when named. One query; the caller layers them.
   */
  templateValues(orgId: string, keys: string[], who: { agentId?: string; userId?: string }): Promise<SecretEntity[]> {
    const base = { orgId, provider: '', key: In(keys) };
    return this.ds
      .getRepository(SecretEntity)
      .findBy([
        { ...base, scope: 'sandbox', agentId: '', userId: '' },
        ...(who.agentId ? [{ ...base, scope: 'agent' as const, agentId: who.agentId, userId: '' }] : []),
        ...(who.userId ? [{ ...base, scope: 'user' as const, agentId: '', userId: who.userId }] : []),
      ]);
  }
}
