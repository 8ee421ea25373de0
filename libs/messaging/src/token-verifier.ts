import { Logger } from '@nestjs/common';
import {
  ErrorCode,
  MAX_TOKEN_BYTES,
  OPERATOR_SUBJECT,
  Scope,
  TOKEN_ALGORITHM,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  TOKEN_USER_CLAIM,
  ToolplaneError,
  type AuthState,
  type Principal,
} from '@toolplane/contracts';
import { ed25519PublicKey } from '@toolplane/crypto';
import { decodeProtectedHeader, jwtVerify, errors as joseErrors } from 'jose';
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';

/** Fetches the verification state; `unchanged` when `version` is current. */
export type AuthStateSource = (
  version: string | undefined,
) => Promise<AuthState | { unchanged: true; version: string }>;

export interface TokenVerifierOptions {
  /** How often the state is fetched again (revocations reach this replica within about this long). */
  refreshMs: number;
  /** Past this age without a successful fetch, tokens are not accepted (SERVICE_UNAVAILABLE): revocations must not be missed for long. */
  maxStaleMs: number;
  /** Verified tokens kept (a hit costs a map lookup instead of a signature check). */
  cacheMax: number;
}

interface Verified {
  principal: Principal;
  kid: string;
  jti: string;
  org?: string;
  expiresAt: number;
}

const Claims = z.object({
  sub: z.string(),
  jti: z.string().min(1).max(128),
  exp: z.number(),
  org: z.string().min(1).max(128).optional(),
  scope: z.string().max(1024),
  /** The end user an org token is bound to (auth.tokens.create {user_id}). */
  [TOKEN_USER_CLAIM]: z.string().min(1).max(256).optional(),
});

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;
const unauthenticated = (message: string) => new ToolplaneError(ErrorCode.UNAUTHENTICATED, message, undefined, false);

/**
 * Verifies org tokens at the edge of every service, without a database round trip: EdDSA JWTs
 * checked with jose against the credentials service's public keys, then cached until they expire.
 * A cached token is still checked on every request against the revocation list, the deleted orgs
 * and the key ring (a key leaving the ring ends its tokens). The state is fetched every
 * `refreshMs`, at once on an AuthChanged hint, and when a token names an unknown key.
 */
export class TokenVerifier {
  private readonly log = new Logger(TokenVerifier.name);
  private state?: {
    version: string;
    raw: Record<string, string>;
    keys: Map<string, KeyObject>;
    revoked: Set<string>;
    deleted: Set<string>;
  };
  private fetchedAt = 0;
  private inflight?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly cache = new Map<string, Verified>();
  private lastUnknownKidFetch = 0;

  constructor(
    private readonly source: AuthStateSource,
    private readonly opts: TokenVerifierOptions,
  ) {}

  /** Starts the periodic refresh (idempotent). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), this.opts.refreshMs);
    this.timer.unref();
    void this.refresh().catch(() => undefined);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Fetch now (single flight). */
  refresh(): Promise<void> {
    this.inflight ??= (async () => {
      try {
        const s = await this.source(this.state?.version);
        if (!('unchanged' in s)) this.install(s);
        this.fetchedAt = Date.now();
      } catch (e) {
        if (this.fetchedAt && Date.now() - this.fetchedAt > this.opts.maxStaleMs) {
          this.log.warn(
            `token verification state is ${Date.now() - this.fetchedAt} ms old and cannot be fetched: ${(e as Error).message}`,
          );
        }
        throw e;
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }

  get version(): string | undefined {
    return this.state?.version;
  }

  /** A change was announced (AuthChanged): fetch now, unless this verifier is not running or already has that version. */
  hint(version: unknown): void {
    if (!this.timer || (typeof version === 'string' && version === this.state?.version)) return;
    void this.refresh().catch(() => undefined);
  }

  /** The principal of an `authorization` header's values, or UNAUTHENTICATED / SERVICE_UNAVAILABLE. */
  async verify(values: string[]): Promise<Principal> {
    if (values.length === 0 || (values.length === 1 && values[0] === ''))
      throw unauthenticated('This subject needs an org token: send `authorization: Bearer <token>`');
    if (values.length > 1) throw unauthenticated('Send exactly one authorization header');
    const value = values[0]!;
    if (value.length > MAX_TOKEN_BYTES + 7)
      throw unauthenticated(`The authorization header is longer than ${MAX_TOKEN_BYTES} bytes`);
    const token = BEARER.exec(value)?.[1];
    if (!token) throw unauthenticated('The authorization header is not `Bearer <jwt>`');
    await this.currentState();
    let v = this.cache.get(token);
    if (!v) {
      v = await this.verifySignature(token);
      if (this.cache.size >= this.opts.cacheMax) this.cache.clear();
      this.cache.set(token, v);
    }
    // Read after the check: an unknown key may have made it fetch a newer state.
    const state = this.state!;
    if (v.expiresAt <= Date.now()) {
      this.cache.delete(token);
      throw unauthenticated('The token has expired');
    }
    if (!state.keys.has(v.kid)) throw unauthenticated('The token was signed with a key that is no longer trusted');
    if (state.revoked.has(v.jti)) throw unauthenticated('The token has been revoked');
    if (v.org !== undefined && state.deleted.has(v.org)) throw unauthenticated('The token belongs to a deleted org');
    return v.principal;
  }

  private async currentState(): Promise<NonNullable<TokenVerifier['state']>> {
    if (!this.state || Date.now() - this.fetchedAt > this.opts.maxStaleMs) {
      await this.refresh().catch((e: Error) => {
        throw new ToolplaneError(
          ErrorCode.SERVICE_UNAVAILABLE,
          `Tokens cannot be verified now: the verification state is unavailable (${e.message})`,
          undefined,
          { cause: e },
        );
      });
    }
    return this.state!;
  }

  private async verifySignature(token: string): Promise<Verified> {
    let kid: string | undefined;
    try {
      const h = decodeProtectedHeader(token);
      if (h.alg !== TOKEN_ALGORITHM)
        throw unauthenticated(`Tokens are signed with ${TOKEN_ALGORITHM}, not ${String(h.alg)}`);
      kid = typeof h.kid === 'string' ? h.kid : undefined;
    } catch (e) {
      if (e instanceof ToolplaneError) throw e;
      throw unauthenticated('The token is not a well-formed JWT');
    }
    if (!kid) throw unauthenticated('The token names no signing key (kid)');
    let key = this.state!.keys.get(kid);
    if (!key && Date.now() - this.lastUnknownKidFetch > 1000) {
      // A key added to the ring since the last fetch: ask once (at most once a second).
      this.lastUnknownKidFetch = Date.now();
      await this.refresh().catch(() => undefined);
      key = this.state!.keys.get(kid);
    }
    if (!key) throw unauthenticated('The token was signed with an unknown key');
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [TOKEN_ALGORITHM],
        issuer: TOKEN_ISSUER,
        audience: TOKEN_AUDIENCE,
        requiredClaims: ['exp', 'jti', 'sub'],
      }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw unauthenticated('The token has expired');
      if (e instanceof joseErrors.JWSSignatureVerificationFailed)
        throw unauthenticated('The token signature is invalid');
      throw unauthenticated(`The token is not valid: ${e instanceof joseErrors.JOSEError ? e.code : 'malformed'}`);
    }
    const c = Claims.safeParse(payload);
    if (!c.success) throw unauthenticated('The token claims are malformed');
    const scopes = c.data.scope.split(' ').filter(Boolean);
    if (!scopes.every((s) => Scope.safeParse(s).success)) throw unauthenticated('The token has an unknown scope');
    const common = { kid, jti: c.data.jti, expiresAt: c.data.exp * 1000 };
    const userId = c.data[TOKEN_USER_CLAIM];
    if (c.data.sub === OPERATOR_SUBJECT && c.data.org === undefined) {
      if (userId !== undefined) throw unauthenticated('An operator token is bound to no end user');
      if (scopes.join(' ') !== 'admin') throw unauthenticated('An operator token holds exactly the admin scope');
      return { ...common, principal: { kind: 'operator', tokenId: c.data.jti } };
    }
    if (c.data.org === undefined || c.data.sub !== `org:${c.data.org}`) throw unauthenticated('The token names no org');
    return {
      ...common,
      org: c.data.org,
      principal: {
        kind: 'tenant',
        org: c.data.org,
        scopes: new Set(scopes as Scope[]),
        tokenId: c.data.jti,
        ...(userId !== undefined ? { userId } : {}),
      },
    };
  }

  private install(s: AuthState): void {
    const keys = new Map<string, KeyObject>();
    for (const [kid, raw] of Object.entries(s.keys)) {
      try {
        keys.set(kid, this.state?.raw[kid] === raw ? this.state.keys.get(kid)! : ed25519PublicKey(raw));
      } catch {
        this.log.warn(`ignoring a malformed token key ${kid}`);
      }
    }
    this.state = {
      version: s.version,
      raw: s.keys,
      keys,
      revoked: new Set(s.revoked_tokens),
      deleted: new Set(s.deleted_orgs),
    };
  }
}
