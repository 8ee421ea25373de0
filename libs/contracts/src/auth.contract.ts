import { z } from 'zod';
import { EndUserId, OrgId } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { APP_NAMES, Scope } from './identity';

export const TOKEN_ID = /^tok-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const TokenId = z.string().regex(TOKEN_ID, 'an id like tok-<uuid>');
/** Default lifetime of an org token (30 days) and the longest allowed (one year). */
export const DEFAULT_TOKEN_TTL_S = 30 * 24 * 3600;
export const MAX_TOKEN_TTL_S = 365 * 24 * 3600;

/** A token as `tokens.list` shows it: never the token itself. */
export const TokenMetadata = z.object({
  token_id: TokenId,
  org_id: z.string().nullable(),
  name: z.string(),
  scopes: z.array(Scope),
  /** The end user the token is bound to (its calls are that user's); null: it acts for the org. */
  user_id: z.string().nullable().default(null),
  /** The signing key (a credentials key-ring id): the token stops working when that key leaves the ring. */
  key_id: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type TokenMetadata = z.infer<typeof TokenMetadata>;

export const AuthTokensCreate = defineRequest({
  subject: 'toolplane.v1.auth.tokens.create',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'admin',
  summary:
    "Mint a token for the org (shown once, never stored). An org admin can grant only scopes it holds; a platform operator any. With user_id the token is bound to that end user: every request it sends that takes a user_id is that user's (filled in when absent), and naming another is FORBIDDEN.",
  request: z.strictObject({
    org_id: OrgId,
    name: z.string().min(1).max(128),
    ttl_s: z.number().int().min(60).max(MAX_TOKEN_TTL_S).default(DEFAULT_TOKEN_TTL_S),
    scopes: z.array(Scope).min(1).max(16).optional(),
    /** Bind the token to this end user (signed into it as the `uid` claim). */
    user_id: EndUserId.optional(),
  }),
  reply: z.object({
    token: z.string(),
    token_id: TokenId,
    scopes: z.array(Scope),
    expires_at: z.string(),
    user_id: z.string().nullable().default(null),
  }),
});

export const AuthTokensList = defineRequest({
  subject: 'toolplane.v1.auth.tokens.list',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'admin',
  summary: "The org's tokens (metadata only), newest first, a page at a time.",
  request: z.strictObject({
    org_id: OrgId,
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ tokens: z.array(TokenMetadata), next_cursor: z.string().nullable() }),
});

export const AuthTokensRevoke = defineRequest({
  subject: 'toolplane.v1.auth.tokens.revoke',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'admin',
  summary: 'Revoke a token of the org: every replica of every service refuses it within AUTH_REFRESH_MS (default 1 s).',
  request: z.strictObject({ org_id: OrgId, token_id: TokenId }),
  reply: z.object({ revoked: z.literal(true) }),
});

export const AuthOrgsDelete = defineRequest({
  subject: 'toolplane.v1.auth.orgs.delete',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'admin',
  summary:
    "Platform operators only: delete an org identity. Every token of the org stops working and no new one can be minted for it; the credentials stored for it (secrets of every scope, its end users' included; its MCP servers' OAuth tokens, the org's and each user's; its webhook) are deleted with it.",
  request: z.strictObject({ org_id: OrgId }),
  reply: z.object({ deleted: z.literal(true), tokens_revoked: z.number().int() }),
});

/** What every verifying service keeps in memory to check tokens without a database round trip. */
export const AuthState = z.object({
  /** Grows with every revocation, org deletion or key change. */
  version: z.string(),
  /** Public keys that verify tokens: kid → raw Ed25519 public key (base64url). A key not listed verifies nothing. */
  keys: z.record(z.string(), z.string()),
  /** Revoked tokens that have not expired yet. */
  revoked_tokens: z.array(z.string()),
  deleted_orgs: z.array(z.string()),
});
export type AuthState = z.infer<typeof AuthState>;

export const AuthStateGet = defineRequest({
  subject: 'toolplane.internal.v1.auth-state.get',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: APP_NAMES,
  summary:
    'The token verification state (signing public keys, revocations, deleted orgs); `unchanged` when the caller has this version.',
  request: z.strictObject({ version: z.string().max(64).optional() }),
  reply: z.union([z.object({ unchanged: z.literal(true), version: z.string() }), AuthState]),
});

/**
 * Internal core-NATS broadcast: the verification state changed (a revocation). A hint only —
 * receivers fetch the state through AuthStateGet (sealed), so a forged hint costs one fetch.
 */
export const AuthChanged = defineEvent({
  subject: 'toolplane.internal.v1.events.auth.changed',
  publishedBy: ['credentials'],
  summary: 'Token verification state changed: fetch it again.',
  payload: z.object({ version: z.string() }),
});

/**
 * Internal core-NATS broadcast (every replica of every subscriber): an org was deleted — its tokens
 * revoked, its stored credentials (secrets, MCP OAuth tokens of the org and of its end users,
 * webhook) deleted by credentials before it answers. Subscribers drop what they hold from them
 * (mcp-sync: the org's MCP sessions and cached OAuth tokens). A hint that only drops caches: a
 * forged one costs reconnects, nothing else.
 */
export const OrgDeleted = defineEvent({
  subject: 'toolplane.internal.v1.events.org.deleted',
  publishedBy: ['credentials'],
  summary: 'An org was deleted with its stored credentials: drop every session and token held for it.',
  payload: z.object({ org_id: OrgId }),
});
