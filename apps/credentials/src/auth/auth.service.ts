import { Injectable, Logger } from '@nestjs/common';
import {
  AuthChanged,
  DEFAULT_TOKEN_SCOPES,
  ErrorCode,
  OrgDeleted,
  ToolplaneError,
  type AuthOrgsDelete,
  type AuthStateGet,
  type AuthTokensCreate,
  type AuthTokensList,
  type AuthTokensRevoke,
  type Principal,
  type ReplyOf,
  type RequestOf,
  type Scope,
  type TokenMetadata,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { CredentialsCache } from '../cache/credentials-cache';
import type { AuthTokenEntity } from './auth-token.entity';
import { AuthRepository } from './auth.repository';
import { TokenMinter } from './token-minter';
import { TokenSigner } from './token-signer';

const forbidden = (message: string) => new ToolplaneError(ErrorCode.FORBIDDEN, message, undefined, false);

/** Org tokens: minted (shown once), listed (metadata), revoked, and the state every verifier checks them against. */
@Injectable()
export class AuthService {
  private readonly log = new Logger(AuthService.name);

  constructor(
    private readonly repo: AuthRepository,
    private readonly signer: TokenSigner,
    private readonly minter: TokenMinter,
    private readonly messaging: MessagingClient,
    private readonly cache: CredentialsCache,
  ) {}

  async create(caller: Principal, req: RequestOf<typeof AuthTokensCreate>): Promise<ReplyOf<typeof AuthTokensCreate>> {
    const scopes = this.grantable(caller, req.scopes);
    if (await this.repo.orgDeleted(req.org_id))
      throw forbidden(`Org ${req.org_id} has been deleted: no token can be minted for it`);
    const minted = await this.minter.mint({
      org: req.org_id,
      name: req.name,
      scopes,
      ...(req.user_id !== undefined ? { userId: req.user_id } : {}),
      ttlS: req.ttl_s,
      createdBy: caller.kind === 'service' ? caller.app : caller.tokenId,
    });
    this.log.log(
      `minted token ${minted.token_id} (${scopes.join(' ')}) for org ${req.org_id}${req.user_id !== undefined ? ', bound to an end user' : ''}`,
    );
    return minted;
  }

  async list(req: RequestOf<typeof AuthTokensList>): Promise<ReplyOf<typeof AuthTokensList>> {
    const after = req.cursor ? decodeCursor(req.cursor) : undefined;
    const rows = await this.repo.page(req.org_id, req.limit + 1, after);
    const page = rows.slice(0, req.limit);
    const last = page.at(-1);
    return { tokens: page.map(toMetadata), next_cursor: rows.length > req.limit && last ? encodeCursor(last) : null };
  }

  async revoke(req: RequestOf<typeof AuthTokensRevoke>): Promise<ReplyOf<typeof AuthTokensRevoke>> {
    const token = await this.repo.find(req.token_id);
    if (!token || token.orgId !== req.org_id)
      throw new ToolplaneError(ErrorCode.TOKEN_NOT_FOUND, `No token ${req.token_id} in this org`, {
        token_id: req.token_id,
      });
    if (await this.repo.revoke(token)) {
      this.log.log(`revoked token ${token.id} of org ${req.org_id}`);
      await this.announce();
    }
    return { revoked: true };
  }

  async deleteOrg(caller: Principal, req: RequestOf<typeof AuthOrgsDelete>): Promise<ReplyOf<typeof AuthOrgsDelete>> {
    if (caller.kind !== 'operator') throw forbidden('Only a platform operator token may delete an org');
    const d = await this.repo.deleteOrg(req.org_id);
    this.log.log(
      `deleted org ${req.org_id}: ${d.tokensRevoked} live token(s) revoked; ${d.secrets} secret(s), ${d.oauthTokens} MCP OAuth token record(s) and ${d.webhooks} webhook(s) deleted`,
    );
    // Every replica and executor drops the org's cached env, mcp-sync its sessions and tokens: before the answer, on its connection.
    this.cache.invalidate(req.org_id);
    this.broadcastDeleted(req.org_id);
    await this.announce();
    return { deleted: true, tokens_revoked: d.tokensRevoked };
  }

  async state(req: RequestOf<typeof AuthStateGet>): Promise<ReplyOf<typeof AuthStateGet>> {
    if (req.version !== undefined && req.version === this.version(await this.repo.revocationVersion()))
      return { unchanged: true, version: req.version };
    const r = await this.repo.revocations();
    return {
      version: this.version(r.version),
      keys: this.signer.publicKeys(),
      revoked_tokens: r.tokens,
      deleted_orgs: r.orgs,
    };
  }

  /** What verifiers compare: the revocations' version and the signing keys'. */
  private version(revocations: string): string {
    return `${revocations}.${this.signer.keysFingerprint()}`;
  }

  /** The scopes a caller may give a new token: an operator any, an org admin only its own. */
  private grantable(caller: Principal, asked: readonly Scope[] | undefined): Scope[] {
    if (caller.kind === 'service') throw forbidden('Services do not mint org tokens');
    const held: ReadonlySet<Scope> | undefined = caller.kind === 'tenant' ? caller.scopes : undefined;
    const scopes = [...new Set(asked ?? DEFAULT_TOKEN_SCOPES.filter((s) => !held || held.has(s)))];
    const beyond = held ? scopes.filter((s) => !held.has(s)) : [];
    if (beyond.length) throw forbidden(`A token can grant only scopes it holds: not ${beyond.join(', ')}`);
    if (!scopes.length) throw forbidden('The token would have no scope');
    return scopes;
  }

  private broadcastDeleted(orgId: string): void {
    try {
      this.messaging.broadcast(OrgDeleted, { org_id: orgId });
    } catch (e) {
      // Its credentials are gone from the database already: what mcp-sync still holds is dropped when its sessions close idle or the user's token is read again.
      this.log.warn(`could not broadcast the deletion of org ${orgId}: ${(e as Error).message}`);
    }
  }

  /** Every verifier fetches the state at once (each also fetches it every AUTH_REFRESH_MS). */
  private async announce(): Promise<void> {
    try {
      this.messaging.broadcast(AuthChanged, { version: this.version(await this.repo.revocationVersion()) });
    } catch (e) {
      this.log.warn(
        `could not broadcast the token state change: ${(e as Error).message}; verifiers still see it within AUTH_REFRESH_MS`,
      );
    }
  }
}

function toMetadata(t: AuthTokenEntity): TokenMetadata {
  return {
    token_id: t.id,
    org_id: t.orgId,
    name: t.name,
    scopes: t.scopes as Scope[],
    user_id: t.userId,
    key_id: t.keyId,
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt.toISOString(),
    revoked_at: t.revokedAt?.toISOString() ?? null,
  };
}

function encodeCursor(t: AuthTokenEntity): string {
  return Buffer.from(JSON.stringify([t.createdAt.toISOString(), t.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof createdAt === 'string' && typeof id === 'string' && !Number.isNaN(Date.parse(createdAt)))
      return { createdAt, id };
  } catch {
    // fall through
  }
  throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'cursor: not a cursor this service returned', {
    issues: [{ path: 'cursor', message: 'unknown cursor' }],
  });
}
