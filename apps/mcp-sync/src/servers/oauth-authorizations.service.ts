import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpAuthorizationRequest, type McpServerInput } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { OAuthTokens, type OAuthAuth, type OAuthState, type OAuthTarget } from '../connections/oauth-tokens';
import { grantOf } from '../connections/oauth-provider';
import type { McpSyncConfig } from '../mcp-sync.config';
import { OAuthAuthorizationsRepository } from './oauth-authorizations.repository';
import { SecretSealer } from './secret-sealer';
import { ORG_SECRET_SOURCE, resolveTemplate, templateNames, type OrgSecretSource } from './templates';

interface Pending {
  input: McpServerInput;
  verifier: string;
  oauth: OAuthState;
}

const aadOf = (orgId: string, state: string): string => `mcp-oauth-authorization\u0000${orgId}\u0000${state}`;

/** A server that needs a user to authorize it (authorization code, the default OAuth grant). */
export function isAuthorizationCode(auth: McpServerInput['auth']): auth is OAuthAuth {
  return auth?.type === 'oauth' && grantOf(auth) === 'authorization_code';
}

/**
 * OAuth 2.1 authorization code with PKCE for MCP servers: `begin` discovers and registers as
 * needed (OAuthTokens), keeps the server settings, the verifier and what it learned (sealed, single
 * use, until MCP_OAUTH_STATE_TTL_MS) and gives the URL to open; `complete` takes the code back,
 * exchanges it with the verifier and stores the tokens.
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

  async begin(orgId: string, serverId: string, input: McpServerInput & { auth: OAuthAuth }): Promise<McpAuthorizationRequest> {
    const target = await this.target(orgId, serverId, input, {});
    const started = await this.oauth.begin(target);
    if (!started) throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'The authorization server issued a token without an authorization: nothing to open');
    const expiresAt = new Date(Date.now() + this.config.MCP_OAUTH_STATE_TTL_MS);
    const pending: Pending = { input, verifier: started.verifier, oauth: target.state };
    await this.pending.insert({ state: started.state, orgId, serverId, serverName: input.name, sealed: this.sealer.seal(pending, aadOf(orgId, started.state)), expiresAt });
    this.log.log(`MCP server ${input.name} of org ${orgId} awaits OAuth authorization (until ${expiresAt.toISOString()})`);
    return { authorization_url: started.url.href, state: started.state, server_name: input.name, expires_at: expiresAt.toISOString() };
  }

  /** The pending server (its id, settings and OAuth state) once its code is exchanged and the tokens stored. */
  async complete(orgId: string, state: string, code: string): Promise<{ serverId: string; input: McpServerInput; oauth: OAuthState }> {
    const row = await this.pending.take(orgId, state);
    if (!row || row.expiresAt.getTime() < Date.now()) {
      throw new ToolplaneError(ErrorCode.MCP_OAUTH_FAILED, 'Unknown, already used or expired OAuth state: add the server again for a new authorization URL', undefined, false);
    }
    const { input, verifier, oauth } = this.sealer.open<Pending>(row.sealed, aadOf(orgId, state)) as Pending;
    const target = await this.target(orgId, row.serverId, input, oauth ?? {});
    await this.oauth.exchange(target, code, verifier);
    return { serverId: row.serverId, input, oauth: target.state };
  }

  /** The flow's view of a server: its OAuth secrets' templates resolved from the org's secrets. */
  private async target(orgId: string, serverId: string, input: McpServerInput, state: OAuthState): Promise<OAuthTarget> {
    const auth = input.auth as OAuthAuth;
    const templated = [auth.client_secret, auth.private_key].filter((v): v is string => v !== undefined);
    const names = templateNames(templated);
    const values = names.length ? await this.secrets.lookup(orgId, names) : {};
    const resolved: OAuthAuth = {
      ...auth,
      ...(auth.client_secret ? { client_secret: resolveTemplate(auth.client_secret, values, 'auth.client_secret') } : {}),
      ...(auth.private_key ? { private_key: resolveTemplate(auth.private_key, values, 'auth.private_key') } : {}),
    };
    return { orgId, serverId, url: input.url!, transport: input.transport === 'sse' ? 'sse' : 'streamable_http', auth: resolved, state };
  }
}
