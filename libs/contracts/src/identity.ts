import { z } from 'zod';

/** Every deployable of Toolplane: each is one service identity (its own key), one NATS user, one queue group. */
export const APP_NAMES = [
  'registry',
  'schema',
  'credentials',
  'executor',
  'runner-local',
  'runner-e2b',
  'runner-modal',
  'mcp-sync',
  'web-tools',
  'mcp-gateway',
] as const;
export const AppName = z.enum(APP_NAMES);
export type AppName = z.infer<typeof AppName>;

/**
 * What an org token may do. Each public subject names the one scope it needs (its descriptor's
 * `scope`). `admin` manages the org's tokens; a platform operator token (no org) holds only
 * `admin` and is accepted only on the `toolplane.v1.auth.*` subjects.
 */
export const SCOPES = [
  'tools:read',
  'tools:write',
  'tools:execute',
  'secrets:read',
  'secrets:write',
  'mcp:read',
  'mcp:write',
  'admin',
] as const;
export const Scope = z.enum(SCOPES);
export type Scope = z.infer<typeof Scope>;
/** Scopes of a new org token when the request names none: everything but admin. */
export const DEFAULT_TOKEN_SCOPES: readonly Scope[] = SCOPES.filter((s) => s !== 'admin');

/** Org tokens are JWTs (RFC 7519) signed with EdDSA (Ed25519) by the credentials service. */
export const TOKEN_ISSUER = 'toolplane';
export const TOKEN_AUDIENCE = 'toolplane';
export const TOKEN_ALGORITHM = 'EdDSA';
/** `sub` of a platform operator token. Org tokens have `sub: "org:<org_id>"` and an `org` claim. */
export const OPERATOR_SUBJECT = 'operator';
export const MAX_TOKEN_BYTES = 4096;
/**
 * The JWT claim of an org token bound to one end user (`auth.tokens.create {user_id}`): signed with
 * the rest, so the token's calls are that user's and it cannot act as another (EdgeAuth.bindEndUser).
 */
export const TOKEN_USER_CLAIM = 'uid';

/** Who sent a request, as the edge verified it. Handlers read this, never headers. */
export type Principal =
  /** `userId`: the end user the token is bound to (its `uid` claim); absent: the token acts for the org. */
  | { kind: 'tenant'; org: string; scopes: ReadonlySet<Scope>; tokenId: string; userId?: string }
  | { kind: 'operator'; tokenId: string }
  | { kind: 'service'; app: AppName };
