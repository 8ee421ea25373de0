import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AuthTokenEntity } from './auth-token.entity';

/** What deleting an org did: live tokens revoked, stored credentials deleted. */
export interface DeletedOrg {
  tokensRevoked: number;
  secrets: number;
  oauthTokens: number;
  webhooks: number;
}

export interface Revocations {
  /** revocationVersion() of the same snapshot. */
  version: string;
  tokens: string[];
  orgs: string[];
}

@Injectable()
export class AuthRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Inserted and read back in one transaction (a concurrent delete of the org's tokens waits for it). */
  insert(t: Omit<AuthTokenEntity, 'createdAt' | 'revokedAt'>): Promise<AuthTokenEntity> {
    return this.ds.transaction(async (em) => {
      await em.getRepository(AuthTokenEntity).insert({ ...t, createdAt: () => 'now()', revokedAt: null });
      return em.getRepository(AuthTokenEntity).findOneByOrFail({ id: t.id });
    });
  }

  find(id: string): Promise<AuthTokenEntity | null> {
    return this.ds.getRepository(AuthTokenEntity).findOneBy({ id });
  }

  /** Newest first; `after` is the last row of the previous page. */
  async page(orgId: string, limit: number, after?: { createdAt: string; id: string }): Promise<AuthTokenEntity[]> {
    const q = this.ds.getRepository(AuthTokenEntity).createQueryBuilder('t').where('t.org_id = :orgId', { orgId });
    if (after) q.andWhere('(t.created_at, t.id) < (:createdAt, :id)', after);
    return q.orderBy('t.created_at', 'DESC').addOrderBy('t.id', 'DESC').limit(limit).getMany();
  }

  async orgDeleted(orgId: string): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `SELECT 1 FROM credentials.auth_revocations WHERE kind = 'org' AND subject = $1`,
      [orgId],
    );
    return rows.length > 0;
  }

  /** Marks the token revoked and records it for verifiers; false when it was revoked already. */
  revoke(token: AuthTokenEntity): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      const r = rowsOf(
        await m.query(
          `UPDATE credentials.auth_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id`,
          [token.id],
        ),
      );
      if (!r.length) return false;
      await recordRevocation(m, 'token', token.id, token.expiresAt);
      return true;
    });
  }

  /**
   * Deletes the org identity: every token of it is revoked, and the credentials stored for it go
   * in the same transaction — its secrets of every scope (its end users' included), the OAuth
   * tokens of its MCP servers (the org's and each user's) and its credentials webhook. (Tables of
   * other features of this app, written here so that no call can find the org gone but its users'
   * credentials still readable.) Returns how many tokens were still live and how many rows went.
   */
  deleteOrg(orgId: string): Promise<DeletedOrg> {
    return this.ds.transaction(async (m) => {
      await recordRevocation(m, 'org', orgId, null);
      const revoked = rowsOf<{ id: string; expires_at: Date }>(
        await m.query(
          `UPDATE credentials.auth_tokens SET revoked_at = now() WHERE org_id = $1 AND revoked_at IS NULL AND expires_at > now() RETURNING id, expires_at`,
          [orgId],
        ),
      );
      for (const t of revoked) await recordRevocation(m, 'token', t.id, t.expires_at);
      const gone = async (table: string) =>
        rowsOf(await m.query(`DELETE FROM credentials.${table} WHERE org_id = $1 RETURNING org_id`, [orgId])).length;
      return {
        tokensRevoked: revoked.length,
        secrets: await gone('secrets'),
        oauthTokens: await gone('oauth_tokens'),
        webhooks: await gone('webhooks'),
      };
    });
  }

  /**
   * What the revocations are now, as one value that changes whenever a revocation is committed:
   * their count and highest seq. (The highest seq alone can miss one: a transaction holding a
   * lower seq may commit after a higher one was read.)
   */
  async revocationVersion(): Promise<string> {
    const [row]: Array<{ version: string }> = await this.ds.query(
      `SELECT ${VERSION_SQL} AS version FROM credentials.auth_revocations`,
    );
    return row?.version ?? '0-0';
  }

  /** Every revocation verifiers must still apply (expired tokens fail on their own), with its version: one statement, one snapshot. */
  async revocations(): Promise<Revocations> {
    const rows: Array<{ kind: string | null; subject: string | null; version: string }> = await this.ds.query(
      `WITH v AS (SELECT ${VERSION_SQL} AS version FROM credentials.auth_revocations)
       SELECT r.kind, r.subject, v.version FROM v LEFT JOIN credentials.auth_revocations r ON r.expires_at IS NULL OR r.expires_at > now()`,
    );
    const live = rows.filter((r) => r.kind !== null);
    return {
      version: rows[0]?.version ?? '0-0',
      tokens: live.filter((r) => r.kind === 'token').map((r) => r.subject!),
      orgs: live.filter((r) => r.kind === 'org').map((r) => r.subject!),
    };
  }
}

const VERSION_SQL = `count(*)::text || '-' || coalesce(max(seq), 0)::text`;

/** TypeORM answers an UPDATE … RETURNING with [rows, count]. */
function rowsOf<T = unknown>(r: unknown): T[] {
  return (Array.isArray(r) && r.length === 2 && Array.isArray(r[0]) && typeof r[1] === 'number' ? r[0] : r) as T[];
}

async function recordRevocation(
  m: EntityManager,
  kind: 'token' | 'org',
  subject: string,
  expiresAt: Date | null,
): Promise<void> {
  await m.query(
    `INSERT INTO credentials.auth_revocations (kind, subject, expires_at) VALUES ($1, $2, $3) ON CONFLICT (kind, subject) DO NOTHING`,
    [kind, subject, expiresAt],
  );
}
