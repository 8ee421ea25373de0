import { Inject, Injectable, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type Scope } from '@toolplane/contracts';
import { TokenVerifier } from '@toolplane/messaging';
import { createHash } from 'node:crypto';
import { AuthRefused, type BearerVerifier, type Caller } from './caller';

export const OIDC_VERIFIER = Symbol('OIDC_VERIFIER');

/** What every MCP endpoint needs of a token: listing and calling tools. */
export const MCP_SCOPES: readonly Scope[] = ['tools:execute'];

const BEARER = /^Bearer\s+(\S+)$/i;

/**
 * The gateway's edge: the bearer token of an HTTP request → its caller. Toolplane org tokens are
 * verified exactly as on NATS (the one TokenVerifier: signature, expiry, revocations, deleted
 * orgs); JWTs of the OIDC issuers an operator configures by their own verifier. Tokens are never
 * logged, never put in a span, never echoed.
 */
@Injectable()
export class GatewayAuth implements OnModuleInit, OnModuleDestroy {
  constructor(
    private readonly tokens: TokenVerifier,
    @Optional() @Inject(OIDC_VERIFIER) private readonly oidc?: BearerVerifier,
  ) {}

  onModuleInit(): void {
    this.tokens.start();
  }

  onModuleDestroy(): void {
    this.tokens.stop();
  }

  async authenticate(authorization: string | string[] | undefined, resource: string): Promise<Caller> {
    if (Array.isArray(authorization))
      throw new AuthRefused(401, 'invalid_request', 'Send exactly one Authorization header');
    if (!authorization)
      throw new AuthRefused(
        401,
        'invalid_token',
        'This MCP endpoint needs a bearer token: a Toolplane org token or a token of a configured identity provider',
      );
    const token = BEARER.exec(authorization)?.[1];
    if (!token) throw new AuthRefused(401, 'invalid_request', 'The Authorization header is not `Bearer <token>`');
    const caller = this.oidc?.accepts(token) ? await this.oidc.verify(token, resource) : await this.orgToken(token);
    const missing = MCP_SCOPES.find((s) => !caller.scopes.has(s));
    if (missing)
      throw new AuthRefused(
        403,
        'insufficient_scope',
        `The token lacks the scope ${missing} that MCP endpoints need`,
        missing,
      );
    return caller;
  }

  private async orgToken(token: string): Promise<Caller> {
    let principal;
    try {
      principal = await this.tokens.verify([`Bearer ${token}`]);
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.UNAUTHENTICATED)
        throw new AuthRefused(401, 'invalid_token', e.message);
      throw e;
    }
    if (principal.kind !== 'tenant')
      throw new AuthRefused(
        403,
        'insufficient_scope',
        'A platform operator token cannot use MCP endpoints: mint an org token',
      );
    return {
      org: principal.org,
      scopes: principal.scopes,
      identity: `token:${principal.tokenId}`,
      userId: principal.userId ?? null,
      via: 'org-token',
    };
  }
}

/** A short, non-reversible name of an identity for keys and logs (never the identity or the token itself). */
export function identityDigest(identity: string): string {
  return createHash('sha256').update(identity).digest('base64url').slice(0, 22);
}
