import {
  AgentToolsAttach,
  AgentToolsDefinitions,
  AgentToolsDetach,
  AgentToolsList,
  AuthOrgsDelete,
  AuthTokensCreate,
  AuthTokensList,
  AuthTokensRevoke,
  ConnectionsGet,
  ConnectionsList,
  ConnectionsRevoke,
  ExecutionsApprove,
  ExecutionsDeny,
  ExecutionsGet,
  ExecutionsList,
  ExecutionsSubmitResult,
  McpOAuthComplete,
  McpServersAdd,
  McpServersGet,
  McpServersList,
  McpServersRemove,
  McpServersSync,
  McpServersUpdate,
  SandboxConfigsGet,
  SandboxConfigsList,
  SandboxConfigsUpsert,
  SchemasGenerate,
  SchemasNormalize,
  SchemasStrictify,
  SchemasValidate,
  SecretsDelete,
  SecretsList,
  SecretsSet,
  ToolsDelete,
  ToolsEnvironment,
  ToolsExecute,
  ToolsExecuteBatch,
  ToolsGet,
  ToolsList,
  ToolsUpsert,
  ToolsetsDelete,
  ToolsetsGet,
  ToolsetsList,
  ToolsetsToolsList,
  ToolsetsUpsert,
  WebhooksDelete,
  WebhooksGet,
  WebhooksSet,
  type ReplyOf,
  type RequestDescriptor,
  type RequestIn,
} from '@toolplane/contracts';

/**
 * The typed facade: every public subject of the contracts, by its path
 * (`toolplane.v1.agents.tools.definitions` → `agents.tools.definitions`, dashes camel-cased).
 * A unit test fails when a public descriptor of the catalog is missing here or sits at the wrong
 * path; a subject added before its method is still callable with `client.call(descriptor, req)`.
 */
export const API = {
  tools: {
    upsert: ToolsUpsert,
    get: ToolsGet,
    list: ToolsList,
    delete: ToolsDelete,
    execute: ToolsExecute,
    executeBatch: ToolsExecuteBatch,
    environment: ToolsEnvironment,
  },
  agents: {
    tools: {
      attach: AgentToolsAttach,
      detach: AgentToolsDetach,
      list: AgentToolsList,
      definitions: AgentToolsDefinitions,
    },
  },
  toolsets: {
    upsert: ToolsetsUpsert,
    get: ToolsetsGet,
    list: ToolsetsList,
    delete: ToolsetsDelete,
    tools: { list: ToolsetsToolsList },
  },
  schemas: {
    generate: SchemasGenerate,
    validate: SchemasValidate,
    strictify: SchemasStrictify,
    normalize: SchemasNormalize,
  },
  executions: {
    get: ExecutionsGet,
    list: ExecutionsList,
    approve: ExecutionsApprove,
    deny: ExecutionsDeny,
    submitResult: ExecutionsSubmitResult,
  },
  secrets: { set: SecretsSet, list: SecretsList, delete: SecretsDelete },
  webhooks: { set: WebhooksSet, get: WebhooksGet, delete: WebhooksDelete },
  sandboxConfigs: { upsert: SandboxConfigsUpsert, get: SandboxConfigsGet, list: SandboxConfigsList },
  mcp: {
    servers: {
      add: McpServersAdd,
      get: McpServersGet,
      list: McpServersList,
      update: McpServersUpdate,
      remove: McpServersRemove,
      sync: McpServersSync,
    },
    oauth: { complete: McpOAuthComplete },
  },
  /** End users' connected accounts on the org's MCP servers (`account: "user"`). */
  connections: { list: ConnectionsList, get: ConnectionsGet, revoke: ConnectionsRevoke },
  auth: {
    tokens: { create: AuthTokensCreate, list: AuthTokensList, revoke: AuthTokensRevoke },
    orgs: { delete: AuthOrgsDelete },
  },
} as const;

/** Options of one call. */
export interface CallOptions {
  /** How long to wait for each attempt's reply (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Aborts the call (and its retries): rejects with `ABORTED`. */
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this call (`false`: one attempt). */
  retry?: Partial<RetryPolicy> | false;
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Delay before the first retry; doubled each time, capped at `maxDelayMs`, with full jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export type Method<D extends RequestDescriptor> = (req: RequestIn<D>, opts?: CallOptions) => Promise<ReplyOf<D>>;

export type Facade<T> = { readonly [K in keyof T]: T[K] extends RequestDescriptor ? Method<T[K]> : Facade<T[K]> };

/** `toolplane.v1.sandbox-configs.upsert` → `['sandboxConfigs', 'upsert']`. */
export function methodPath(subject: string): string[] {
  return subject
    .replace(/^toolplane\.v[0-9]+\./, '')
    .split('.')
    .map((s) => s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
}

/** Every descriptor of `API` with its path. */
export function apiEntries(
  node: object = API,
  path: string[] = [],
): Array<{ path: string[]; descriptor: RequestDescriptor }> {
  return Object.entries(node).flatMap(([k, v]) =>
    (v as { kind?: string }).kind === 'request'
      ? [{ path: [...path, k], descriptor: v as RequestDescriptor }]
      : apiEntries(v as object, [...path, k]),
  );
}

/** Builds the facade object, each leaf calling `call(descriptor, req, opts)`. */
export function buildFacade<T extends object>(
  node: T,
  call: (d: RequestDescriptor, req: unknown, opts?: CallOptions) => Promise<unknown>,
): Facade<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] =
      (v as { kind?: string }).kind === 'request'
        ? (req: unknown, opts?: CallOptions) => call(v as RequestDescriptor, req, opts)
        : buildFacade(v as object, call);
  }
  return out as Facade<T>;
}
