import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpAuthorizationRequest, type McpServerInput } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { OAuthClient, type OAuthAuth, type OAuthState, type OAuthTarget } from '../connections/oauth-client';
import { grantOf } from '../connections/oauth-provider';
import type { McpSyncConfig } from '../mcp-sync.config';
import { OAuthAuthorizationsRepository } from '../store/oauth-authorizations.repository';
import { SecretSealer, type SealRef } from '../store/secret-sealer';
import { ServersRepository } from '../store/servers.repository';
import {
  authTemplates,
  ORG_SECRET_SOURCE,
  resolveOAuth,
  templateNames,
  type OrgSecretSource,
} from '../store/templates';

interface Pending {
  /** A server being added; absent for a stored server authorized again (or with more scope). */
  input?: McpServerInput;
  verifier: string;
  oauth: OAuthState;
  /** An end user's connection (account "user"): the tokens are stored for this user only. */
  userId?: string;
}

/** What a completed authorization leaves: the server's id, its settings when it is being added, what OAuth learned. */
export interface Completed {
  serverId: string;
  serverName: string;
  /** An end user's connection was completed (their tokens stored). */
  userId?: string;
  input?: McpServerInput;
  oauth: OAuthState;
}

const refOf = (orgId: string, state: string): SealRef => ({ orgId, purpose: 'mcp-authorization', ref: state });

/** A server that needs a user to authorize it (authorization code, the default OAuth grant). */
export function isAuthorizationCode(auth: McpServerInput['auth']): auth is OAuthAuth {
  return auth?.type === 'oauth' && grantOf(auth) === 'authorization_code';
}

/**
 * OAuth 2.1 authorization code with PKCE for MCP servers: `begin` discovers and registers as
 * needed (OAuthClient), keeps the server settings, the verifier and what it learned (sealed, single
 * use, until MCP_OAUTH_STATE_TTL_MS) and gives the URL to open; `complete` takes the code back,
 * exchanges it with the verifier and stores the tokens.
 */
@Injectable()
export class AuthorizationCodeFlow implements OnModuleInit {
  private readonly log = new Logger(AuthorizationCodeFlow.name);

  constructor(
    private readonly pending: OAuthAuthorizationsRepository,
    private readonly sealer: SecretSealer,
    private readonly oauth: OAuthClient,
    @Inject(ORG_SECRET_SOURCE) private readonly secrets: OrgSecretSource,
    @Inject(APP_CONFIG) private readonly config: McpSyncConfig,
    private readonly servers: ServersRepository,
  ) {}

  onModuleInit(): void {
    // A server that needs a user mid-operation (refresh refused, step-up): its authorization is kept
    // like an add's, and a stored server shows it (servers.get pending_authorization).
    this.oauth.onAuthorizationRequired(async ({ target, started, reason, scope }) => {
      const expiresAt = new Date(Date.now() + this.config.MCP_OAUTH_STATE_TTL_MS);
      // Stored by now (a session opened during its add may outlive the add): the stored server's authorization.
      const adding = target.input !== undefined && !(await this.servers.findById(target.orgId, target.serverId));
      const userId = target.userId;
      const pending: Pending = {
        ...(adding ? { input: target.input } : {}),
        verifier: started.verifier,
        oauth: target.state,
        ...(userId ? { userId } : {}),
      };
      const sealed = await this.sealer.seal(pending, refOf(target.orgId, started.state));
      await this.pending.insert({
        state: started.state,
        orgId: target.orgId,
        serverId: target.serverId,
        serverName: target.name,
        userId: userId ?? null,
        sealed,
        expiresAt,
      });
      if (userId) {
        // One user's connection: the server itself is fine (no pending_authorization on it for everyone).
        this.log.log(
          `an end user of org ${target.orgId} needs to connect MCP server ${target.name} (${target.serverId}) (${reason}) until ${expiresAt.toISOString()}`,
        );
        return { expiresAt: expiresAt.toISOString() };
      }
      if (!adding) {
        await this.servers.setPendingAuthorization(target.serverId, {
          reason,
          authorization_url: started.url.href,
          state: started.state,
          expires_at: expiresAt.toISOString(),
          scope,
        });
      }
      this.log.log(
        `MCP server ${target.name} (${target.serverId}) of org ${target.orgId} needs authorization (${reason}) until ${expiresAt.toISOString()}`,
      );
      return { expiresAt: expiresAt.toISOString() };
    });
  }

  async begin(
    orgId: string,
    serverId: string,
    input: McpServerInput & { auth: OAuthAuth },
  ): Promise<McpAuthorizationRequest> {
    const target = await this.target(orgId, serverId, input, {});
    const started = await this.oauth.begin(target);
    if (!started)
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        'The authorization server issued a token without an authorization: nothing to open',
      );
    const expiresAt = new Date(Date.now() + this.config.MCP_OAUTH_STATE_TTL_MS);
    const pending: Pending = { input, verifier: started.verifier, oauth: target.state };
    await this.pending.insert({
      state: started.state,
      orgId,
      serverId,
      serverName: input.name,
      sealed: await this.sealer.seal(pending, refOf(orgId, started.state)),
      expiresAt,
    });
    this.log.log(
      `MCP server ${input.name} of org ${orgId} awaits OAuth authorization (until ${expiresAt.toISOString()})`,
    );
    return {
      authorization_url: started.url.href,
      state: started.state,
      server_name: input.name,
      expires_at: expiresAt.toISOString(),
    };
  }

  /**
   * The code came back: exchanged with the verifier, the tokens stored. `stored` gives the settings
   * of a stored server (an authorization it needed again); an add carries its own.
   */
  async complete(
    orgId: string,
    state: string,
    code: string,
    userId: string | undefined,
    stored: (serverId: string) => Promise<McpServerInput>,
  ): Promise<Completed> {
    const row = await this.pending.take(orgId, state, userId);
    if (!row || row.expiresAt.getTime() < Date.now()) {
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        'Unknown, already used or expired OAuth state: ask for a new authorization URL',
        undefined,
        false,
      );
    }
    const pending = (await this.sealer.open<Pending>(row.sealed, refOf(orgId, state))).value as Pending;
    const { input, verifier, oauth } = pending;
    if ((pending.userId ?? null) !== (row.userId ?? null))
      throw new ToolplaneError(
        ErrorCode.MCP_OAUTH_FAILED,
        'This OAuth state does not match its record: ask for a new authorization URL',
        undefined,
        false,
      );
    const target = await this.target(
      orgId,
      row.serverId,
      input ?? (await stored(row.serverId)),
      oauth ?? {},
      pending.userId,
    );
    if (!input) delete target.input;
    if (pending.userId) target.userId = pending.userId;
    await this.oauth.exchange(target, code, verifier);
    return {
      serverId: row.serverId,
      serverName: row.serverName,
      ...(input ? { input } : {}),
      ...(pending.userId ? { userId: pending.userId } : {}),
      oauth: target.state,
    };
  }

  /** The flow's view of a server: its OAuth secrets' templates resolved from the org's secrets. */
  private async target(
    orgId: string,
    serverId: string,
    input: McpServerInput,
    state: OAuthState,
    userId?: string,
  ): Promise<OAuthTarget> {
    const auth = input.auth as OAuthAuth;
    const names = templateNames(authTemplates(auth));
    const resolved = resolveOAuth(
      auth,
      names.length ? await this.secrets.lookup(orgId, names, userId ? { userId } : {}) : {},
    );
    return {
      orgId,
      serverId,
      name: input.name,
      url: input.url!,
      transport: input.transport === 'sse' ? 'sse' : 'streamable_http',
      auth: resolved,
      state,
      input,
    };
  }
}
