import { z } from 'zod';
import { EndUserId, OrgId } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { PipRequirement, ToolId } from './tool';

/** Sandbox providers a secret or a sandbox config can be bound to. */
export const Provider = z.enum(['local', 'e2b', 'modal']);
export type Provider = z.infer<typeof Provider>;

/**
 * A provider's own credentials, as an org stores them: sandbox-scoped secrets bound to that
 * provider with these names. Resolving a call's env for the provider takes them out of the tool's
 * env and hands them to the runner alone (ExecutionEnvResolve's `provider_credentials`).
 */
export const PROVIDER_CREDENTIAL_KEYS: Readonly<Record<Provider, readonly string[]>> = {
  local: [],
  e2b: ['E2B_API_KEY'],
  modal: ['MODAL_TOKEN_ID', 'MODAL_TOKEN_SECRET'],
};

/**
 * Whose a secret is: the org's sandbox env (`sandbox`), one agent's (`agent`, with agent_id) or one
 * end user's (`user`, with user_id). A call's env takes user over agent over org (ExecutionEnvResolve).
 */
export const SecretScope = z.enum(['sandbox', 'agent', 'user']);
export type SecretScope = z.infer<typeof SecretScope>;

/** Variables Toolplane sets on every call; nothing stored or passed can override them. */
export const RESERVED_ENV_NAMES = ['TOOLPLANE_ORG_ID', 'TOOLPLANE_AGENT_ID', 'TOOLPLANE_TOOL_ID'] as const;

export const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'env names: letters, digits, _ (max 128)');
export const EnvValue = z.string().max(32_768);
export const AgentId = z.string().min(1).max(128);

const SecretKey = EnvName.refine((k) => !(RESERVED_ENV_NAMES as readonly string[]).includes(k), {
  message: 'reserved name (TOOLPLANE_ORG_ID, TOOLPLANE_AGENT_ID, TOOLPLANE_TOOL_ID)',
});
const agentMatchesScope = (r: { scope?: SecretScope; agent_id?: string }): boolean =>
  r.scope === undefined || (r.scope === 'agent') === (r.agent_id !== undefined);
const agentRule = {
  message: 'agent_id is required with scope "agent" and not allowed with the other scopes',
  path: ['agent_id'],
};
const userMatchesScope = (r: { scope?: SecretScope; user_id?: string }): boolean =>
  r.scope === undefined || (r.scope === 'user') === (r.user_id !== undefined);
const userRule = {
  message: 'user_id is required with scope "user" and not allowed with the other scopes',
  path: ['user_id'],
};

/** A secret as the API shows it: metadata only, never the value. */
export const SecretMetadata = z.object({
  key: z.string(),
  scope: SecretScope,
  agent_id: z.string().nullable(),
  /** The end user of a `scope: "user"` secret; null for the others. */
  user_id: z.string().nullable().default(null),
  provider: Provider.nullable(),
  description: z.string().nullable(),
  /** false: the value is not masked in the tool's output. */
  mask: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SecretMetadata = z.infer<typeof SecretMetadata>;

export const SecretsSet = defineRequest({
  subject: 'toolplane.v1.secrets.set',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:write',
  summary:
    "Store (or replace) an encrypted secret: a sandbox-config env var (scope sandbox), an agent secret (scope agent, agent_id) or an end user's secret (scope user, user_id). The reply never holds the value.",
  request: z
    .strictObject({
      org_id: OrgId,
      scope: SecretScope,
      agent_id: AgentId.optional(),
      user_id: EndUserId.optional(),
      provider: Provider.optional(),
      key: SecretKey,
      value: EnvValue,
      description: z.string().max(1024).optional(),
      mask: z.boolean().default(true),
    })
    .refine(agentMatchesScope, agentRule)
    .refine(userMatchesScope, userRule),
  reply: z.object({ secret: SecretMetadata }),
});

export const SecretsList = defineRequest({
  subject: 'toolplane.v1.secrets.list',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:read',
  summary: "The org's secrets (keys and metadata, never values), optionally of one scope, one agent or one end user.",
  request: z.strictObject({
    org_id: OrgId,
    scope: SecretScope.optional(),
    agent_id: AgentId.optional(),
    user_id: EndUserId.optional(),
  }),
  reply: z.object({ secrets: z.array(SecretMetadata) }),
});

export const SecretsDelete = defineRequest({
  subject: 'toolplane.v1.secrets.delete',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:write',
  summary: 'Delete one secret of the org.',
  request: z
    .strictObject({
      org_id: OrgId,
      scope: SecretScope,
      agent_id: AgentId.optional(),
      user_id: EndUserId.optional(),
      provider: Provider.optional(),
      key: EnvName,
    })
    .refine(agentMatchesScope, agentRule)
    .refine(userMatchesScope, userRule),
  reply: z.object({ deleted: z.literal(true) }),
});

export const WebhookFailMode = z.enum(['open', 'closed']);
export const Webhook = z.object({
  url: z.string(),
  timeout_ms: z.number().int(),
  fail_mode: WebhookFailMode,
  cache_ttl_ms: z.number().int(),
});
export type Webhook = z.infer<typeof Webhook>;

export const WebhooksSet = defineRequest({
  subject: 'toolplane.v1.webhooks.set',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:write',
  summary:
    "Set the org's credentials webhook (called at execution time; its reply's env is merged). The signing secret is stored encrypted and never returned.",
  request: z.strictObject({
    org_id: OrgId,
    url: z.url({ protocol: /^https?$/ }).max(2048),
    signing_secret: z.string().min(16).max(1024),
    timeout_ms: z.number().int().min(100).max(10_000).default(2000),
    fail_mode: WebhookFailMode.default('closed'),
    cache_ttl_ms: z.number().int().min(0).max(3_600_000).default(0),
  }),
  reply: z.object({ webhook: Webhook }),
});

export const WebhooksGet = defineRequest({
  subject: 'toolplane.v1.webhooks.get',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:read',
  summary: "The org's credentials webhook (without its signing secret).",
  request: z.strictObject({ org_id: OrgId }),
  reply: z.object({ webhook: Webhook }),
});

export const WebhooksDelete = defineRequest({
  subject: 'toolplane.v1.webhooks.delete',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:write',
  summary: "Remove the org's credentials webhook.",
  request: z.strictObject({ org_id: OrgId }),
  reply: z.object({ deleted: z.literal(true) }),
});

/** Provider settings of a sandbox config. Its env vars are `scope: "sandbox"` secrets. */
export const SandboxSettings = z
  .strictObject({
    timeout_ms: z.number().int().min(100).max(3_600_000).optional(),
    memory_mb: z.number().int().min(16).max(65_536).optional(),
    cpu: z.number().min(0.1).max(64).optional(),
    network: z.enum(['none', 'egress']).optional(),
    pip_requirements: z.array(PipRequirement).max(256).optional(),
    template: z.string().min(1).max(256).optional(),
    /** local: let package builds run build scripts (npm lifecycle scripts, sdist builds when the runner installs wheels only); default off. */
    build_scripts: z.boolean().optional(),
    /**
     * This provider runs the org's custom tools that do not name one (`metadata_.sandbox`). At most
     * one config of an org is the default: setting it here clears it on the others. No default: local.
     */
    default: z.boolean().optional(),
    /**
     * Providers to try, in order, when this one cannot take a call (PROVIDER_UNAVAILABLE-class
     * errors only: the tool did not start). The result names the provider that failed (`fallback_from`).
     */
    fallback_providers: z.array(Provider).max(3).optional(),
    /** Remote providers: calls one sandbox may run at once (default 1). */
    calls_per_sandbox: z.number().int().min(1).max(64).optional(),
  })
  .refine((c) => !c.fallback_providers || new Set(c.fallback_providers).size === c.fallback_providers.length, {
    message: 'fallback_providers: each provider once',
  });
export type SandboxSettings = z.infer<typeof SandboxSettings>;

export const SandboxConfig = z.object({
  provider: Provider,
  config: SandboxSettings,
  /** sha256 over the settings and the sandbox env vars' keys and versions: changes whenever either changes. */
  fingerprint: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SandboxConfig = z.infer<typeof SandboxConfig>;

export const SandboxConfigsUpsert = defineRequest({
  subject: 'toolplane.v1.sandbox-configs.upsert',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:write',
  summary: "Create or replace the org's sandbox config for a provider.",
  request: z.strictObject({ org_id: OrgId, provider: Provider, config: SandboxSettings }),
  reply: z.object({ sandbox_config: SandboxConfig }),
});

export const SandboxConfigsGet = defineRequest({
  subject: 'toolplane.v1.sandbox-configs.get',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:read',
  summary: "The org's sandbox config for a provider, with its fingerprint.",
  request: z.strictObject({ org_id: OrgId, provider: Provider }),
  reply: z.object({ sandbox_config: SandboxConfig }),
});

export const SandboxConfigsList = defineRequest({
  subject: 'toolplane.v1.sandbox-configs.list',
  visibility: 'public',
  servedBy: 'credentials',
  scope: 'secrets:read',
  summary: "The org's sandbox configs, one per provider.",
  request: z.strictObject({ org_id: OrgId }),
  reply: z.object({ sandbox_configs: z.array(SandboxConfig) }),
});

/** Internal: the executor asks for the env of one call, once, before dispatching it. */
export const ExecutionEnvResolve = defineRequest({
  subject: 'toolplane.internal.v1.execution-env.resolve',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['executor'],
  summary:
    "Resolve the environment of one tool call: sandbox-config vars < webhook < agent secrets < the end user's secrets < per-call env < reserved ids.",
  request: z.strictObject({
    org_id: OrgId,
    agent_id: AgentId.optional(),
    /** The end user the call is made for: their `scope: "user"` secrets win over the agent's and the org's. */
    user_id: EndUserId.optional(),
    tool_id: ToolId,
    tool_name: z.string().nullable(),
    project_id: z.string().nullable(),
    /** The provider that will run the call; absent: the org's default (its sandbox config marked `default`), else local. */
    provider: Provider.optional(),
    env: z.record(EnvName, EnvValue).optional(),
  }),
  reply: z.object({
    /** The provider the env was resolved for (the one asked for, or the org's default). */
    provider: Provider,
    /** That provider's config's fallback list (empty: none). */
    fallback_providers: z.array(Provider),
    /** The provider's credentials from the org's provider-scoped secrets (PROVIDER_CREDENTIAL_KEYS): never in `env`. */
    provider_credentials: z.record(z.string(), z.string()).optional(),
    env: z.record(z.string(), z.string()),
    /** Names whose values the executor masks in stdout, stderr and the return value. */
    masked_keys: z.array(z.string()),
    sandbox_config_fingerprint: z.string().nullable(),
    /** The org's settings for this provider (timeout, memory, network, pip requirements); null when it has none. */
    sandbox_config: SandboxSettings.nullable(),
    /**
     * How long the executor may reuse this reply for the same request (0 or absent: not at all,
     * e.g. when the org has a credentials webhook, which is asked per call). Reuse ends earlier on
     * CredentialsChanged for the org.
     */
    cache_ttl_ms: z.number().int().min(0).optional(),
  }),
});

/**
 * Internal core-NATS broadcast (no queue group: every replica of every subscriber gets it; no
 * stream): the org's secrets, sandbox configs or webhook changed. Published by credentials before
 * it answers the write, on the connection it answers on, so with one NATS server a subscriber sees
 * it before any request sent after that answer. Subscribers drop what they cached for the org.
 */
export const CredentialsChanged = defineEvent({
  subject: 'toolplane.internal.v1.events.credentials.changed',
  publishedBy: ['credentials'],
  summary: "The org's secrets, sandbox configs or webhook changed: drop anything cached from them.",
  payload: z.object({ org_id: OrgId }),
});

/**
 * The credentials webhook request headers. The signature is HMAC-SHA256 (hex) keyed by the
 * webhook's signing secret over `${timestamp}.${raw body}`; a receiver refuses timestamps outside
 * WEBHOOK_REPLAY_WINDOW_S of its clock.
 */
export const WebhookHeaders = {
  TIMESTAMP: 'toolplane-timestamp',
  SIGNATURE: 'toolplane-signature',
  DELIVERY_ID: 'toolplane-delivery-id',
} as const;
export const WEBHOOK_SIGNATURE_PREFIX = 'v1=';
export const WEBHOOK_REPLAY_WINDOW_S = 300;

/** The body POSTed to the webhook. */
export const WebhookRequestBody = z.object({
  organization_id: z.string(),
  agent_id: z.string().nullable(),
  /** The end user the call is made for (its execution's user_id); null when it names none. */
  user_id: z.string().nullable(),
  tool_id: z.string(),
  tool_name: z.string().nullable(),
  project_id: z.string().nullable(),
});

/** What the webhook must answer (other top-level fields are ignored). */
export const WebhookReplyBody = z.object({
  env: z.record(EnvName, EnvValue).refine((e) => Object.keys(e).length <= 256, { message: 'at most 256 env vars' }),
});

/**
 * Internal: the values of the secrets named in `{{VAR}}` templates (MCP server env, headers,
 * tokens). An "org secret" is a `scope: "sandbox"` secret with no agent and no provider — the
 * org-wide value set with `toolplane.v1.secrets.set {scope: "sandbox", key}`. With `agent_id` and
 * `user_id` the same precedence as a call's env applies: the user's secret (scope user) over the
 * agent's (scope agent) over the org's, provider-less values only; provider-specific values never
 * resolve here, and one user's value never answers another user's request.
 */
export const OrgSecretsResolve = defineRequest({
  subject: 'toolplane.internal.v1.org-secrets.resolve',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync'],
  summary:
    "Decrypt the secrets of these names for MCP server templates: the end user's (user_id) over the agent's (agent_id) over the org-wide ones (scope sandbox, no agent, no provider); names none of them has come back in missing.",
  request: z.strictObject({
    org_id: OrgId,
    agent_id: AgentId.optional(),
    user_id: EndUserId.optional(),
    names: z.array(EnvName).min(1).max(256),
  }),
  reply: z.object({ values: z.record(z.string(), z.string()), missing: z.array(z.string()) }),
});

/** An MCP server's OAuth tokens as mcp-sync uses them (internal only: never in a public reply). */
export const OAuthTokenSet = z.object({
  access_token: z.string().min(1).max(16_384),
  refresh_token: z.string().min(1).max(16_384).nullable(),
  /** Epoch milliseconds: when the issuer gave them, and when the access token expires (null: no lifetime given). */
  issued_at: z.number().int(),
  expires_at: z.number().int().nullable(),
  scope: z.string().max(1024).nullable(),
});
export type OAuthTokenSet = z.infer<typeof OAuthTokenSet>;

/** An end user's own tokens (an `account: "user"` MCP server); absent: the org's. */
const TokenUserId = z.string().min(1).max(256);

/**
 * Tokens are bound to their issuer: one record per (org, MCP server, end user or the org, issuer =
 * token endpoint URL).
 */
const OAuthTokenRef = {
  org_id: OrgId,
  server_id: z.string().min(1).max(128),
  issuer: z.url({ protocol: /^https?$/ }).max(2048),
  user_id: TokenUserId.optional(),
};

/** Internal: mcp-sync stores (or replaces) an MCP server's OAuth tokens, sealed like every secret. */
export const McpOAuthTokensStore = defineRequest({
  subject: 'toolplane.internal.v1.mcp-oauth-tokens.store',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync'],
  summary: "Store (or replace) an MCP server's OAuth tokens for one issuer, encrypted (AES-256-GCM envelope).",
  request: z.strictObject({ ...OAuthTokenRef, tokens: OAuthTokenSet }),
  reply: z.object({ stored: z.literal(true) }),
});

/** Internal: mcp-sync reads an MCP server's OAuth tokens for one issuer (null when none are stored). */
export const McpOAuthTokensFetch = defineRequest({
  subject: 'toolplane.internal.v1.mcp-oauth-tokens.fetch',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync'],
  summary: "An MCP server's stored OAuth tokens for one issuer, decrypted, or null.",
  request: z.strictObject(OAuthTokenRef),
  reply: z.object({ tokens: OAuthTokenSet.nullable() }),
});

/** Internal: forget every token of an MCP server (removed, or its auth changed). */
export const McpOAuthTokensDelete = defineRequest({
  subject: 'toolplane.internal.v1.mcp-oauth-tokens.delete',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync'],
  summary: "Delete every stored OAuth token of an MCP server (all its users'), or only one end user's (user_id).",
  request: z.strictObject({ org_id: OrgId, server_id: z.string().min(1).max(128), user_id: TokenUserId.optional() }),
  reply: z.object({ deleted: z.number().int() }),
});

/** What is known of a stored token record without opening it: never a token. */
export const OAuthTokenRecord = z.object({
  server_id: z.string(),
  /** null: the org's tokens. */
  user_id: z.string().nullable(),
  issuer: z.string(),
  scope: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  expires_at: z.string().nullable(),
});
export type OAuthTokenRecord = z.infer<typeof OAuthTokenRecord>;

/** Internal: the connected accounts of an org (which token records exist, their scope and times), for connections.list. */
export const McpOAuthTokensList = defineRequest({
  subject: 'toolplane.internal.v1.mcp-oauth-tokens.list',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync'],
  summary: "The org's stored OAuth token records (one user's or one server's), without their tokens.",
  request: z.strictObject({
    org_id: OrgId,
    server_id: z.string().min(1).max(128).optional(),
    user_id: TokenUserId.optional(),
    users_only: z.boolean().optional(),
  }),
  reply: z.object({ records: z.array(OAuthTokenRecord).max(10_000) }),
});

/**
 * What another service keeps sealed under the credentials key ring (it stores the blob, credentials
 * holds the keys): an MCP server's secrets (headers, env, auth, what OAuth learned) and a pending
 * MCP authorization; the executor's stored call arguments and results (`execution`). The associated
 * data binds a blob to (purpose, org, ref): it opens nowhere else.
 */
export const SealPurpose = z.enum(['mcp-server', 'mcp-authorization', 'execution']);
export type SealPurpose = z.infer<typeof SealPurpose>;
const SealRef = { org_id: OrgId, purpose: SealPurpose, ref: z.string().min(1).max(256) };

/** Internal: seal a value under the active key of the credentials key ring. */
export const SealedValuesSeal = defineRequest({
  subject: 'toolplane.internal.v1.sealed-values.seal',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync', 'executor'],
  summary:
    'Seal a value of another service under the credentials key ring (AES-256-GCM envelope, bound to purpose, org and ref); the caller stores the blob.',
  request: z.strictObject({ ...SealRef, plaintext: z.string().max(8 * 1024 * 1024) }),
  reply: z.object({ key_id: z.string(), blob: z.string() }),
});

/** Internal: open a value sealed by sealed-values.seal; `stale` when its key is no longer the active one (seal it again). */
export const SealedValuesOpen = defineRequest({
  subject: 'toolplane.internal.v1.sealed-values.open',
  visibility: 'internal',
  servedBy: 'credentials',
  callers: ['mcp-sync', 'executor'],
  summary:
    'Open a value sealed under the credentials key ring; says whether it should be sealed again under the active key (rotation).',
  request: z.strictObject({
    ...SealRef,
    key_id: z.string().min(1).max(128),
    blob: z
      .string()
      .min(1)
      .max(12 * 1024 * 1024),
  }),
  reply: z.object({ plaintext: z.string(), stale: z.boolean() }),
});
