import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpAuthorizationRequest, type McpServerInput } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { randomBytes } from 'node:crypto';
import { OAuthTokens, pkcePair, type OAuthAuth } from '../connections/oauth-tokens';
import type { McpSyncConfig } from '../mcp-sync.config';
import { OAuthAuthorizationsRepository } from './oauth-authorizations.repository';
import { SecretSealer } from './secret-sealer';
import { ORG_SECRET_SOURCE, resolveTemplate, templateNames, type OrgSecretSource } from './templates';

export type AuthorizationCodeAuth = Extract<OAuthAuth, { grant_type: 'authorization_code' }>;

interface Pending {
  input: McpServerInput;
  verifier: string;
}

const aadOf = (orgId: string, state: string): string => `mcp-oauth-authorization\u0000${orgId}\u0000${state}`;

export function isAuthorizationCode(auth: McpServerInput['auth']): auth is AuthorizationCodeAuth {
  return auth?.type === 'oauth' && auth.grant_type === 'authorization_code';
}

/**
 * OAuth 2.1 authorization code with PKCE for MCP servers: `begin` keeps the server settings and
 * the verifier (sealed, single use, until MCP_OAUTH_STATE_TTL_MS) and gives the URL to open;
 * `complete` takes the code back, exchanges it with the verifier and stores the tokens.
 */
@Injectable()
export class OAuthAuthorizationsService {
  private readonly log = new Logger(OAuthAuthorizationsService.name);

  constructor(
    private readonly pending: OAuthAuthorizationsRepository,
    private readonly sealer: SecretSealer,
    private readonly oauth: OAuthTokens,
    @Inject(ORG_SECRET_SOURCE) private readonly secrets: OrgSecretSource,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
  ) {}

  async begin(orgId: string, serverId: string, input: McpServerInput & { auth: AuthorizationCodeAuth }): Promise<McpAuthorizationRequest> {
    const { verifier, challenge } = pkcePair();
    const state = randomBytes(24).toString('base64url');
    const expiresAt = new Date(Date.now() + this.config.MCP_OAUTH_STATE_TTL_MS);
    const pending: Pending = { input, verifier };
    await this.pending.insert({ state, orgId, serverId, serverName: input.name, sealed: this.sealer.seal(pending, aadOf(orgId, state)), expiresAt });
    const auth = input.auth;
    const url = new URL(auth.authorization_url);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', auth.client_id);
    url.searchParams.set('redirect_uri', auth.redirect_uri);
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', challenge);
    url.searchParams.set('code_challenge_method', 'S256');
    if (auth.scope) url.searchParams.set('scope', auth.scope);
    this.log.log(`MCP server ${input.name} of org ${orgId} awaits OAuth authorization (until ${expiresAt.toISOString()})`);
    return { authorization_url: url.href, state, server_name: input.name, expires_at: expiresAt.toISOString() };
  }

  /** The pending server (its id and settings) once its code is exchanged and the tokens stored. */
  async complete(orgId: string, state: string, code: string): Promise<{ serverId: string; input: McpServerInput }> {
    const row = await this.pending.take(orgId, state);
    if (!row || row.expiresAt.getTime() < Date.now()) {
      throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'Unknown, already used or expired OAuth state: add the server again for a new authorization URL', undefined, false);
    }
    const { input, verifier } = this.sealer.open<Pending>(row.sealed, aadOf(orgId, state)) as Pending;
    const auth = input.auth as AuthorizationCodeAuth;
    let resolved = auth;
    if (auth.client_secret) {
      const names = templateNames([auth.client_secret]);
      const values = names.length ? await this.secrets.lookup(orgId, names) : {};
      resolved = { ...auth, client_secret: resolveTemplate(auth.client_secret, values, 'auth.client_secret') };
    }
    await this.oauth.exchangeCode(orgId, row.serverId, resolved, code, verifier);
    return { serverId: row.serverId, input };
  }
}
