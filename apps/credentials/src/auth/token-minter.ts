import { Injectable } from '@nestjs/common';
import type { ReplyOf, AuthTokensCreate, Scope } from '@toolplane/contracts';
import { randomUUID } from 'node:crypto';
import { AuthRepository } from './auth.repository';
import { TokenSigner } from './token-signer';

export interface MintRequest {
  /** undefined: a platform operator token (scope admin, any org, auth subjects only). */
  org?: string;
  name: string;
  scopes: readonly Scope[];
  /** Bound to this end user (org tokens only). */
  userId?: string;
  ttlS: number;
  /** The minting token's id, or `cli`. */
  createdBy: string;
}

/** Records a token's metadata, then signs it. The token string leaves only in the reply. */
@Injectable()
export class TokenMinter {
  constructor(
    private readonly repo: AuthRepository,
    private readonly signer: TokenSigner,
  ) {}

  async mint(t: MintRequest): Promise<ReplyOf<typeof AuthTokensCreate>> {
    const jti = `tok-${randomUUID()}`;
    const issuedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const expiresAt = new Date(issuedAt.getTime() + t.ttlS * 1000);
    const userId = t.org !== undefined ? t.userId : undefined;
    await this.repo.insert({
      id: jti,
      orgId: t.org ?? null,
      userId: userId ?? null,
      name: t.name,
      scopes: [...t.scopes],
      keyId: this.signer.activeKeyId,
      createdBy: t.createdBy,
      expiresAt,
    });
    const token = await this.signer.sign({
      jti,
      org: t.org,
      scopes: t.scopes,
      ...(userId !== undefined ? { userId } : {}),
      issuedAt,
      expiresAt,
    });
    return {
      token,
      token_id: jti,
      scopes: [...t.scopes],
      expires_at: expiresAt.toISOString(),
      user_id: userId ?? null,
    };
  }
}
