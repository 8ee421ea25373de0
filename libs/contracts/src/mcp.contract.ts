import { z } from 'zod';
import { AgentToolDetachment, MAX_REPORTED_DETACHMENTS } from './agents.contract';
import { JsonObject, OrgId } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { EndUserId, ProviderRunReply } from './execute.contract';
import { SchemaHealth } from './schemas.contract';
import { ToolId } from './tool';

/** MCP servers: how Toolplane reaches them, what it keeps of them, and what a sync did. */

export const McpTransport = z.enum(['stdio', 'sse', 'streamable_http']);
export type McpTransport = z.infer<typeof McpTransport>;

export const MCP_SERVER_ID = /^mcp-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const McpServerId = z.string().regex(MCP_SERVER_ID, 'an id like mcp-<uuid>');
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'a server name of 1-64 letters, digits, _ . -');
/** Prepended to every tool name of the server (namespacing; avoids collisions). */
export const McpToolPrefix = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,31}$/, 'a prefix of 1-32 letters, digits or _');

const HeaderName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'an HTTP header name');
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'env names: letters, digits, _');
/** Values may hold `{{VAR}}` / `{{VAR | default}}` templates, resolved from the org's secrets when connecting. */
const TemplatedValue = z.string().max(8192);

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048);

/** How Toolplane authenticates at an OAuth token endpoint (RFC 6749 §2.3, RFC 7523). */
export const TokenEndpointAuthMethod = z.enum(['client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt']);
export type TokenEndpointAuthMethod = z.infer<typeof TokenEndpointAuthMethod>;

/**
 * OAuth 2.1 for an MCP server (the MCP authorization spec). Only `type` is required: from the
 * server's URL Toolplane discovers the rest — Protected Resource Metadata (RFC 9728, from the 401's
 * WWW-Authenticate or the well-known paths), the authorization server's metadata (RFC 8414 or
 * OpenID discovery) — and registers a client when none is given (a Client ID Metadata Document
 * where the server supports it and MCP_OAUTH_CLIENT_METADATA_URL is set, else Dynamic Client
 * Registration, RFC 7591). Every field given overrides what discovery finds.
 *
 * - `authorization_code` (the default): PKCE S256; `servers.add` answers with the URL to open and
 *   `toolplane.v1.mcp.oauth.complete` takes the code the redirect received.
 * - `client_credentials`: machine to machine; needs `client_id` and `client_secret` or `private_key`.
 *
 * Every authorization and token request carries the RFC 8707 `resource` (the server's canonical
 * URI); the tokens are bound to it. Secrets may be `{{VAR}}` templates of the org's secrets.
 */
const OAuthAuthInput = z
  .strictObject({
    type: z.literal('oauth'),
    grant_type: z.enum(['authorization_code', 'client_credentials']).optional(),
    /** The authorization server (issuer URL): skips Protected Resource Metadata discovery. */
    issuer: HttpUrl.optional(),
    authorization_url: HttpUrl.optional(),
    token_url: HttpUrl.optional(),
    registration_url: HttpUrl.optional(),
    client_id: z.string().min(1).max(2048).optional(),
    client_secret: TemplatedValue.min(1).optional(),
    /** PEM (PKCS#8) or JWK JSON of the key for `private_key_jwt` (usually `{{SECRET_NAME}}`). */
    private_key: TemplatedValue.min(1).optional(),
    signing_alg: z.enum(['ES256', 'ES384', 'RS256', 'RS384', 'RS512', 'PS256', 'EdDSA']).optional(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
    /** Where the authorization server sends the browser back (authorization_code); default MCP_OAUTH_REDIRECT_URI. */
    redirect_uri: z.url().max(2048).optional(),
    /** Overrides the scope from WWW-Authenticate and scopes_supported. */
    scope: z.string().max(1024).optional(),
    /**
     * Whose account the server acts as (not the OAuth `scope`): `org` (the default) — one
     * authorization for the whole org; `user` — each end user connects their own account, and a
     * call uses the calling user's tokens (stored per org, user and server). Tools are synced with
     * the org's authorization given at servers.add (or listed without one where the server allows it).
     */
    account: z.enum(['org', 'user']).optional(),
  })
  .refine(
    (a) =>
      a.grant_type !== 'client_credentials' ||
      (a.client_id !== undefined && (a.client_secret !== undefined || a.private_key !== undefined)),
    {
      message: 'client_credentials needs client_id and client_secret or private_key',
    },
  )
  .refine((a) => a.token_endpoint_auth_method !== 'private_key_jwt' || a.private_key !== undefined, {
    message: 'private_key_jwt needs private_key',
  })
  .refine((a) => a.private_key === undefined || a.client_id !== undefined, {
    message: 'private_key needs the client_id it is registered for',
  });

export const McpAuthInput = z.union([
  z.strictObject({ type: z.literal('bearer'), token: TemplatedValue.min(1) }),
  OAuthAuthInput,
]);
export type McpAuthInput = z.infer<typeof McpAuthInput>;

const serverFields = {
  transport: McpTransport,
  command: z.string().min(1).max(1024).optional(),
  args: z.array(z.string().max(4096)).max(64).optional(),
  env: z
    .record(EnvName, TemplatedValue)
    .refine((e) => Object.keys(e).length <= 128, { message: 'at most 128 env vars' })
    .optional(),
  url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  headers: z
    .record(HeaderName, TemplatedValue)
    .refine((h) => Object.keys(h).length <= 64, { message: 'at most 64 headers' })
    .optional(),
  auth: McpAuthInput.optional(),
  tool_prefix: McpToolPrefix.optional(),
};

const transportRule = (s: { transport: McpTransport; command?: string; url?: string }): boolean =>
  s.transport === 'stdio'
    ? s.command !== undefined && s.url === undefined
    : s.url !== undefined && s.command === undefined;
const transportMessage = {
  message: 'stdio takes command (and args, env); sse and streamable_http take url (and headers)',
};

export const McpServerInput = z
  .strictObject({ name: McpServerName, ...serverFields })
  .refine(transportRule, transportMessage);
export type McpServerInput = z.infer<typeof McpServerInput>;

/** The result of one discovery + registry write. Counts, plus every tool that could not be kept as asked. */
export const McpSyncReport = z.object({
  added: z.number().int(),
  updated: z.number().int(),
  removed: z.number().int(),
  unchanged: z.number().int(),
  /** Tools stored with health INVALID (visible, not executable until the server fixes them). */
  invalid: z.number().int(),
  /** How many tools the server listed (every page). */
  listed: z.number().int(),
  pages: z.number().int(),
  /** Per-tool or per-step problems: collisions, unnamed tools, pages that failed (codes: McpSyncErrorCode). */
  errors: z.array(z.object({ code: z.string(), message: z.string(), tool: z.string().optional() })),
  invalid_tools: z.array(z.object({ name: z.string(), reasons: z.array(z.string()) })),
  /** How many agent↔tool attachments the removed tools took with them (each agent lost its tool). */
  detached: z.number().int().default(0),
  /** The first MAX_REPORTED_DETACHMENTS of them: which agent lost which tool. */
  detachments: z.array(AgentToolDetachment).max(MAX_REPORTED_DETACHMENTS).default([]),
  /** false when the listing stopped early: nothing was removed then. */
  complete: z.boolean(),
  duration_ms: z.number(),
});
export type McpSyncReport = z.infer<typeof McpSyncReport>;

/** The codes of a sync report's `errors`: what happened to one tool or one step of a sync. */
export enum McpSyncErrorCode {
  /** A name held by a custom tool or another server's tool: not written (see tool_prefix). */
  TOOL_NAME_COLLISION = 'TOOL_NAME_COLLISION',
  /** A tool whose definition does not fit in one registry message: not written, the stored version kept. */
  TOOL_TOO_LARGE = 'TOOL_TOO_LARGE',
  /** A tool whose name or description exceeds the registry's limits: not written, the stored version kept. */
  MCP_TOOL_REJECTED = 'MCP_TOOL_REJECTED',
  /** A listed tool without a usable name. */
  MCP_TOOL_MALFORMED = 'MCP_TOOL_MALFORMED',
  /** The server listed a name more than once (the first is kept). */
  MCP_TOOL_DUPLICATE = 'MCP_TOOL_DUPLICATE',
  /** A page of tools/list failed: the listing is partial, nothing is removed. */
  MCP_LIST_FAILED = 'MCP_LIST_FAILED',
  /** The listing stopped early (page or tool limit, a repeated cursor): nothing is removed. */
  MCP_LIST_INCOMPLETE = 'MCP_LIST_INCOMPLETE',
}

export const McpSyncTrigger = z.enum(['add', 'update', 'manual', 'list_changed', 'periodic']);

/** A server as the API shows it: never a token, a header value or an env value. */
export const McpServer = z.object({
  id: McpServerId,
  name: z.string(),
  transport: McpTransport,
  command: z.string().nullable(),
  args: z.array(z.string()),
  url: z.string().nullable(),
  env_keys: z.array(z.string()),
  header_names: z.array(z.string()),
  auth_type: z.enum(['bearer', 'oauth']).nullable(),
  /** OAuth: whose account the server acts as (`user`: each end user's own connection); `org` otherwise. */
  account: z.enum(['org', 'user']).default('org'),
  /**
   * OAuth: the server needs a user to authorize it — its refresh was refused (`reauthorize`) or it
   * asks for more scope (`step_up`). Open the URL, then `mcp.oauth.complete`; null when authorized.
   */
  pending_authorization: z
    .object({
      reason: z.enum(['reauthorize', 'step_up']),
      authorization_url: z.string(),
      state: z.string(),
      expires_at: z.string(),
      scope: z.string().nullable(),
    })
    .nullable(),
  tool_prefix: z.string().nullable(),
  tool_count: z.number().int(),
  last_sync: z
    .object({
      at: z.string(),
      trigger: McpSyncTrigger,
      ok: z.boolean(),
      report: McpSyncReport.nullable(),
      error: z.string().nullable(),
    })
    .nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type McpServer = z.infer<typeof McpServer>;

/**
 * Connected accounts: which end users have authorized an `account: "user"` MCP server (and the
 * org's own authorization of a server). Never a token.
 */
export const McpConnection = z.object({
  server_id: McpServerId,
  server_name: z.string(),
  /** null: the org's authorization (account "org", or the one a user server's tools are synced with). */
  user_id: z.string().nullable(),
  account: z.enum(['org', 'user']),
  scopes: z.array(z.string()),
  connected_at: z.string(),
  refreshed_at: z.string(),
  /** When the access token expires (it is refreshed before); null when the server gave no lifetime. */
  expires_at: z.string().nullable(),
});
export type McpConnection = z.infer<typeof McpConnection>;

/** What servers.add answers for an OAuth authorization-code server: the URL to open (state + S256 challenge in it). */
export const McpAuthorizationRequest = z.object({
  authorization_url: z.string(),
  state: z.string(),
  server_name: z.string(),
  expires_at: z.string(),
});
export type McpAuthorizationRequest = z.infer<typeof McpAuthorizationRequest>;

const ServerRef = { org_id: OrgId, id: McpServerId.optional(), name: McpServerName.optional() };
const oneRef = (r: { id?: string; name?: string }): boolean => (r.id === undefined) !== (r.name === undefined);
const oneRefMessage = { message: 'give exactly one of id or name' };

export const McpServersAdd = defineRequest({
  subject: 'toolplane.v1.mcp.servers.add',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary:
    'Register an MCP server for the org: connect, list every page of its tools, store them as external_mcp tools and report what happened. Secrets are stored encrypted and never returned.',
  request: z.strictObject({ org_id: OrgId, server: McpServerInput }),
  /** With OAuth authorization_code: nothing is connected yet; open the URL, then call mcp.oauth.complete. */
  reply: z.union([
    z.object({ server: McpServer, sync: McpSyncReport }),
    z.object({ authorization: McpAuthorizationRequest }),
  ]),
});

export const McpOAuthComplete = defineRequest({
  subject: 'toolplane.v1.mcp.oauth.complete',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary:
    'Finish an OAuth authorization-code server add: exchange the code (with the PKCE verifier) at the issuer, store the tokens encrypted in the credentials service, connect and sync.',
  request: z.strictObject({
    org_id: OrgId,
    state: z.string().min(16).max(256),
    code: z.string().min(1).max(4096),
    /**
     * The end user completing a connection of an `account: "user"` server: it must be the user the
     * authorization was started for (a state is bound to its org, user and server).
     */
    user_id: EndUserId.optional(),
  }),
  /** A server's add or re-authorization: the server and its sync. A user's connection: that connection. */
  reply: z.union([z.object({ server: McpServer, sync: McpSyncReport }), z.object({ connection: McpConnection })]),
});

export const McpServersGet = defineRequest({
  subject: 'toolplane.v1.mcp.servers.get',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:read',
  summary: 'One MCP server of the org, by id or name.',
  request: z.strictObject(ServerRef).refine(oneRef, oneRefMessage),
  reply: z.object({ server: McpServer }),
});

export const McpServersList = defineRequest({
  subject: 'toolplane.v1.mcp.servers.list',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:read',
  summary: "The org's MCP servers, by name.",
  request: z.strictObject({ org_id: OrgId }),
  reply: z.object({ servers: z.array(McpServer) }),
});

export const McpServersUpdate = defineRequest({
  subject: 'toolplane.v1.mcp.servers.update',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary: 'Change how an MCP server is reached (fields given replace the stored ones), then resync its tools.',
  request: z
    .strictObject({
      ...ServerRef,
      server: z.strictObject({ ...serverFields, transport: McpTransport.optional() }).partial(),
    })
    .refine(oneRef, oneRefMessage),
  reply: z.object({ server: McpServer, sync: McpSyncReport }),
});

export const McpServersRemove = defineRequest({
  subject: 'toolplane.v1.mcp.servers.remove',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary: 'Remove an MCP server and every tool it brought.',
  request: z.strictObject(ServerRef).refine(oneRef, oneRefMessage),
  reply: z.object({ removed: z.literal(true), tools_removed: z.number().int() }),
});

export const McpServersSync = defineRequest({
  subject: 'toolplane.v1.mcp.servers.sync',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary: "Re-list every page of the server's tools now and bring the registry in step; the report says what changed.",
  request: z.strictObject(ServerRef).refine(oneRef, oneRefMessage),
  reply: z.object({ server: McpServer, sync: McpSyncReport }),
});

const McpServerEventBase = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  server_id: McpServerId,
  server_name: z.string(),
});

export const McpServerSynced = defineEvent({
  subject: 'toolplane.v1.events.mcp-server.synced',
  publishedBy: ['mcp-sync'],
  summary: "An MCP server's tools were synced (or the attempt failed: ok false, error says why).",
  payload: McpServerEventBase.extend({
    trigger: McpSyncTrigger,
    ok: z.boolean(),
    report: McpSyncReport.nullable(),
    error: z.string().nullable(),
  }),
});

/**
 * One step of a running sync, for live displays (`toolplane mcp sync`): each page of tools/list
 * read, then the registry write (announced, then each staged page written). Best effort; the sync
 * ends with mcp-server.synced, whose report is the authoritative outcome.
 */
export const McpServerProgressed = defineEvent({
  subject: 'toolplane.v1.events.mcp-server.progressed',
  publishedBy: ['mcp-sync'],
  summary:
    'A running sync of an MCP server made progress: a page of its tools listed, or the write of its tool set begun or advanced.',
  payload: McpServerEventBase.extend({
    /** The same for every progress event of one sync run. */
    sync_id: z.uuid(),
    trigger: McpSyncTrigger,
    phase: z.enum(['listing', 'writing']),
    /** Pages of tools/list read so far, and the tools they listed. */
    pages: z.number().int(),
    listed: z.number().int(),
    /** Problems found so far (malformed or duplicate tools, failed pages; the report names them). */
    errors: z.number().int(),
    /** Listed tools whose schema is INVALID (null while listing). */
    invalid: z.number().int().nullable(),
    /** The registry write (null while listing): tools written, and its messages sent of all. */
    write: z.object({ tools: z.number().int(), pages_done: z.number().int(), pages: z.number().int() }).nullable(),
  }),
});

export const McpServerRemoved = defineEvent({
  subject: 'toolplane.v1.events.mcp-server.removed',
  publishedBy: ['mcp-sync'],
  summary: 'An MCP server was removed with its tools.',
  payload: McpServerEventBase.extend({ tools_removed: z.number().int() }),
});
/** Every mcp-server event (synced, removed), read by descriptor. */
export const MCP_SERVER_EVENTS = [McpServerSynced, McpServerRemoved] as const;

/** What `metadata_.mcp` holds on every external_mcp tool. */
export const McpToolMetadata = z.looseObject({
  server_id: McpServerId,
  server_name: z.string(),
  /** The tool's name on the server (the registry name may carry the server's tool_prefix). */
  tool_name: z.string(),
  health: SchemaHealth,
  reasons: z.array(z.string()),
  /** The server's inputSchema when normalization changed it. */
  original_schema: z.unknown().optional(),
});
export type McpToolMetadata = z.infer<typeof McpToolMetadata>;

/** Internal: the executor hands an external_mcp tool call to mcp-sync. Same reply as a runner's. */
export const McpToolsCall = defineRequest({
  subject: 'toolplane.internal.v1.mcp-tools.call',
  opaque: ['args'],
  visibility: 'internal',
  servedBy: 'mcp-sync',
  callers: ['executor'],
  summary:
    "Call one tool on the org's MCP server (tools/call) within timeout_ms; cancellation is sent to the server when it expires.",
  request: z.strictObject({
    org_id: OrgId,
    tool_id: ToolId,
    /** The tool's metadata_.mcp as the registry holds it. */
    mcp: McpToolMetadata,
    args: JsonObject,
    agent_id: z.string().optional(),
    /** The end user of the call: an `account: "user"` server is called with this user's tokens (and templates resolve from their secrets first). */
    user_id: EndUserId.optional(),
    /** The call's timeout; each progress notification from the server restarts it... */
    timeout_ms: z.number().int().min(1),
    /** ...up to this total, after which the call is cancelled whatever the progress. */
    max_timeout_ms: z.number().int().min(1),
  }),
  reply: ProviderRunReply,
});

/** One tool of an external source (an MCP server) as the registry should hold it. */
export const ExternalToolInput = z.strictObject({
  name: z.string().min(1).max(256),
  description: z.string().max(65_536).nullable(),
  json_schema: JsonObject,
  tags: z.array(z.string().min(1).max(128)).max(64),
  metadata_: JsonObject,
});
export type ExternalToolInput = z.infer<typeof ExternalToolInput>;

/**
 * Internal: mcp-sync gives the registry the full tool set of one source; the registry applies the
 * adds, updates and (when `complete`) removals in one transaction. Names stay unique per org: a
 * name held by a custom tool or another source's tool is a collision, reported and not written.
 */
export const ExternalToolsSync = defineRequest({
  subject: 'toolplane.internal.v1.external-tools.sync',
  visibility: 'internal',
  servedBy: 'registry',
  callers: ['mcp-sync'],
  summary:
    "Replace one external source's tools (an MCP server's) with the given set, atomically, reporting name collisions.",
  request: z.strictObject({
    org_id: OrgId,
    tool_type: z.literal('external_mcp'),
    /** The source's id (the MCP server id): the registry matches tools by metadata_.mcp.server_id. */
    source_id: McpServerId,
    tools: z.array(ExternalToolInput).max(10_000),
    /** false: the listing was partial, so tools missing from it are kept. */
    complete: z.boolean(),
    /**
     * A tool set too large for one message: its pages were staged first with
     * external-tools.stage under sync_id; they are applied with `tools` in this one transaction.
     */
    staged: z.strictObject({ sync_id: z.uuid(), pages: z.number().int().min(1).max(10_000) }).optional(),
    /**
     * Names the source still lists whose tools are not in this write (each too large for any
     * message): the source's stored tools of these names are kept as they are, even when complete.
     */
    keep: z.array(z.string().min(1).max(256)).max(10_000).optional(),
  }),
  reply: z.object({
    added: z.array(z.string()),
    updated: z.array(z.string()),
    removed: z.array(z.string()),
    unchanged: z.number().int(),
    /** The source's stored tools left as they were because `keep` named them. */
    kept: z.number().int().default(0),
    /** Attachments of the removed tools to agents, detached with them: the count, and the first MAX_REPORTED_DETACHMENTS. */
    detached: z.number().int().default(0),
    detachments: z.array(AgentToolDetachment).max(MAX_REPORTED_DETACHMENTS).default([]),
    collisions: z.array(
      z.object({ name: z.string(), existing_tool_id: z.string(), existing_tool_type: z.string(), reason: z.string() }),
    ),
  }),
});

/**
 * Internal: one page of a tool set too large for one NATS message (max payload 1 MiB). Pages are
 * only kept (for at most an hour); nothing is applied until external-tools.sync names the sync_id.
 */
export const ExternalToolsStage = defineRequest({
  subject: 'toolplane.internal.v1.external-tools.stage',
  visibility: 'internal',
  servedBy: 'registry',
  callers: ['mcp-sync'],
  summary:
    "Stage one page of an external source's tool set for a later atomic external-tools.sync (begin/page/commit).",
  request: z.strictObject({
    org_id: OrgId,
    source_id: McpServerId,
    sync_id: z.uuid(),
    page: z.number().int().min(0).max(9_999),
    tools: z.array(ExternalToolInput).min(1).max(10_000),
  }),
  reply: z.object({ staged: z.number().int() }),
});

/** A server by id or name. */
const ServerKey = z.string().min(1).max(128);

export const ConnectionsList = defineRequest({
  subject: 'toolplane.v1.connections.list',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:read',
  summary:
    "The org's connected accounts on its MCP servers: one user's (user_id), one server's (server: id or name), or all. Never a token.",
  request: z.strictObject({ org_id: OrgId, user_id: EndUserId.optional(), server: ServerKey.optional() }),
  reply: z.object({ connections: z.array(McpConnection) }),
});

export const ConnectionsGet = defineRequest({
  subject: 'toolplane.v1.connections.get',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:read',
  summary:
    "One user's connection to one MCP server (server: id or name); CONNECTION_NOT_FOUND when the user has not connected it.",
  request: z.strictObject({ org_id: OrgId, user_id: EndUserId, server: ServerKey }),
  reply: z.object({ connection: McpConnection }),
});

export const ConnectionsRevoke = defineRequest({
  subject: 'toolplane.v1.connections.revoke',
  visibility: 'public',
  servedBy: 'mcp-sync',
  scope: 'mcp:write',
  summary:
    "Disconnect a user's account from an MCP server: their tokens are deleted and, where the authorization server has a revocation endpoint (RFC 7009), revoked there; their next call asks them to authorize again.",
  request: z.strictObject({ org_id: OrgId, user_id: EndUserId, server: ServerKey }),
  reply: z.object({
    revoked: z.boolean(),
    /** `revoked`: the authorization server took the revocation; `unsupported`: it has no revocation endpoint; `failed`: it did not answer 200 (the tokens are deleted here all the same). */
    upstream: z.enum(['revoked', 'unsupported', 'failed', 'none']),
  }),
});

const ConnectionEventPayload = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  user_id: z.string(),
  server_id: McpServerId,
  server_name: z.string(),
});

export const ConnectionAuthorized = defineEvent({
  subject: 'toolplane.v1.events.connection.authorized',
  publishedBy: ['mcp-sync'],
  summary: 'An end user connected their account to an MCP server (mcp.oauth.complete).',
  payload: ConnectionEventPayload,
});

export const ConnectionRefreshed = defineEvent({
  subject: 'toolplane.v1.events.connection.refreshed',
  publishedBy: ['mcp-sync'],
  summary: "An end user's tokens for an MCP server were refreshed.",
  payload: ConnectionEventPayload,
});

export const ConnectionExpired = defineEvent({
  subject: 'toolplane.v1.events.connection.expired',
  publishedBy: ['mcp-sync'],
  summary:
    "An end user's connection to an MCP server can no longer be refreshed (or asks for more scope): the user must authorize it again.",
  payload: ConnectionEventPayload,
});

export const ConnectionRevoked = defineEvent({
  subject: 'toolplane.v1.events.connection.revoked',
  publishedBy: ['mcp-sync'],
  summary: "An end user's connection to an MCP server was revoked (connections.revoke).",
  payload: ConnectionEventPayload,
});

/** Every connection event, read by descriptor. */
export const CONNECTION_EVENTS = [
  ConnectionAuthorized,
  ConnectionRefreshed,
  ConnectionExpired,
  ConnectionRevoked,
] as const;
