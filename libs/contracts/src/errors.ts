import { z } from 'zod';

/** Every error code Toolplane puts on the wire. One enum, one retry policy. */
export enum ErrorCode {
  MALFORMED_MESSAGE = 'MALFORMED_MESSAGE',
  CONTRACT_VIOLATION = 'CONTRACT_VIOLATION',
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  /** No credential, or one that is malformed, forged, expired, revoked or for a deleted org. */
  UNAUTHENTICATED = 'UNAUTHENTICATED',
  /** A valid credential that may not do this: another org, a missing scope, a service not allowed to call the subject. */
  FORBIDDEN = 'FORBIDDEN',
  TOKEN_NOT_FOUND = 'TOKEN_NOT_FOUND',
  TOOL_NOT_FOUND = 'TOOL_NOT_FOUND',
  /** A custom tools.upsert named a tool an external source (an MCP server) owns. */
  TOOL_NAME_CONFLICT = 'TOOL_NAME_CONFLICT',
  /** An upsert or delete of a built-in tool (letta_builtin, letta_core, letta_memory_core): Toolplane owns them, tenants only use them. */
  TOOL_READ_ONLY = 'TOOL_READ_ONLY',
  /** No toolset (published tool set) of this name in the org. */
  TOOLSET_NOT_FOUND = 'TOOLSET_NOT_FOUND',
  SCHEMA_GENERATION_FAILED = 'SCHEMA_GENERATION_FAILED',
  SCHEMA_INVALID = 'SCHEMA_INVALID',
  INVALID_ARGUMENTS = 'INVALID_ARGUMENTS',
  /** A batch with more calls than the executor takes in one request (EXECUTE_BATCH_MAX_CALLS): nothing ran. */
  BATCH_TOO_LARGE = 'BATCH_TOO_LARGE',
  UNSUPPORTED_TOOL = 'UNSUPPORTED_TOOL',
  RUNNER_UNAVAILABLE = 'RUNNER_UNAVAILABLE',
  SERVICE_UNAVAILABLE = 'SERVICE_UNAVAILABLE',
  /** The service is shutting down (e.g. a rolling restart) and gave the request up unfinished: retry it. */
  SERVICE_RESTARTING = 'SERVICE_RESTARTING',
  REQUEST_TIMEOUT = 'REQUEST_TIMEOUT',
  /** The caller cancelled the request (e.g. an MCP client's notifications/cancelled): the work for it was stopped. Not retried: the caller asked for it. */
  REQUEST_CANCELLED = 'REQUEST_CANCELLED',
  // Credentials
  CREDENTIALS_UNAVAILABLE = 'CREDENTIALS_UNAVAILABLE',
  SECRET_NOT_FOUND = 'SECRET_NOT_FOUND',
  WEBHOOK_NOT_FOUND = 'WEBHOOK_NOT_FOUND',
  WEBHOOK_URL_REFUSED = 'WEBHOOK_URL_REFUSED',
  SANDBOX_CONFIG_NOT_FOUND = 'SANDBOX_CONFIG_NOT_FOUND',
  ENCRYPTION_KEY_MISSING = 'ENCRYPTION_KEY_MISSING',
  // MCP servers
  MCP_SERVER_NOT_FOUND = 'MCP_SERVER_NOT_FOUND',
  MCP_SERVER_EXISTS = 'MCP_SERVER_EXISTS',
  MCP_TRANSPORT_DISABLED = 'MCP_TRANSPORT_DISABLED',
  /** A stdio server whose command, arguments or env an operator did not allow (MCP_STDIO_ALLOWED_COMMANDS). */
  MCP_COMMAND_REFUSED = 'MCP_COMMAND_REFUSED',
  MCP_URL_REFUSED = 'MCP_URL_REFUSED',
  MCP_CONNECTION_FAILED = 'MCP_CONNECTION_FAILED',
  MCP_TOOL_UNAVAILABLE = 'MCP_TOOL_UNAVAILABLE',
  /** An OAuth flow failed: unknown, used or expired state; the authorization server refused the client, code or registration; metadata for another resource. */
  MCP_OAUTH_FAILED = 'MCP_OAUTH_FAILED',
  /** The server's OAuth tokens are gone or can no longer be refreshed: authorize it again. */
  MCP_OAUTH_REAUTHORIZE = 'MCP_OAUTH_REAUTHORIZE',
  /**
   * The server needs a user to authorize (again, or with more scope: step-up): details carry a
   * fresh `authorization_url` and its `state`; open it, then `mcp.oauth.complete`.
   */
  MCP_AUTHORIZATION_REQUIRED = 'MCP_AUTHORIZATION_REQUIRED',
  /** The end user has not connected their account to this MCP server (connections.get). */
  CONNECTION_NOT_FOUND = 'CONNECTION_NOT_FOUND',
  // Execution records
  /** No execution with this id in the org (never created, another org's, or past its retention). */
  EXECUTION_NOT_FOUND = 'EXECUTION_NOT_FOUND',
  /** The idempotency key was used in the window for another tool or other arguments: nothing ran. */
  IDEMPOTENCY_CONFLICT = 'IDEMPOTENCY_CONFLICT',
  /** A call with this idempotency key is still running and did not finish within this request's time: ask again (details: execution_id). */
  EXECUTION_IN_PROGRESS = 'EXECUTION_IN_PROGRESS',
  /** approve/deny of an execution that is not waiting for approval (details: status). */
  EXECUTION_NOT_PENDING = 'EXECUTION_NOT_PENDING',
  /** submit-result for an execution that already has its outcome, or that is not waiting for the client (details: status). */
  EXECUTION_ALREADY_COMPLETED = 'EXECUTION_ALREADY_COMPLETED',
  // Execution outcomes (carried in ToolExecutionResult.error, not in the envelope)
  /** The executor that had claimed the run died before recording its outcome; the run is never started again (unless the tool is declared idempotent). */
  EXECUTOR_LOST = 'EXECUTOR_LOST',
  /** A human denied the call (the result's func_return carries the reason, as the reference system words it). */
  EXECUTION_DENIED = 'EXECUTION_DENIED',
  /** Nobody approved or denied the call within its approval TTL. */
  EXECUTION_EXPIRED = 'EXECUTION_EXPIRED',
  TOOL_EXCEPTION = 'TOOL_EXCEPTION',
  /** run_code in a language the call's provider does not run (details: language, provider, languages). */
  LANGUAGE_UNAVAILABLE = 'LANGUAGE_UNAVAILABLE',
  EXECUTION_TIMEOUT = 'EXECUTION_TIMEOUT',
  OUTPUT_LIMIT_EXCEEDED = 'OUTPUT_LIMIT_EXCEEDED',
  SANDBOX_FAILURE = 'SANDBOX_FAILURE',
  DEPENDENCY_INSTALL_FAILED = 'DEPENDENCY_INSTALL_FAILED',
  /** A remote sandbox died or vanished during the call (the tool may have started): the runner replaces it. */
  SANDBOX_LOST = 'SANDBOX_LOST',
  // Providers (envelope errors: the call did not run)
  /** The call's environment (its pip/npm requirements) is still being built: retry later (details: provider, progress). */
  ENVIRONMENT_BUILDING = 'ENVIRONMENT_BUILDING',
  /** The provider cannot take calls now (unreachable, 5xx, no runner deployed for it). The org's fallback list applies. */
  PROVIDER_UNAVAILABLE = 'PROVIDER_UNAVAILABLE',
  /** The provider is rate-limiting or out of quota. The org's fallback list applies. */
  PROVIDER_RATE_LIMITED = 'PROVIDER_RATE_LIMITED',
  /** The provider refused the org's (or the runner's) credentials: fix the E2B_API_KEY / Modal token. */
  PROVIDER_AUTH_FAILED = 'PROVIDER_AUTH_FAILED',
  // Web built-ins (fetch_webpage, web_search)
  /** A URL whose scheme is not http or https (details: scheme). */
  URL_SCHEME_UNSUPPORTED = 'URL_SCHEME_UNSUPPORTED',
  /** The SSRF policy refused the target (or a redirect's target): a private, loopback, link-local or other non-global address not on the operator's allowlist. Nothing was sent to it. */
  EGRESS_REFUSED = 'EGRESS_REFUSED',
  /** The response is larger than the fetch cap (details: limit_bytes); the rest was not read. */
  CONTENT_TOO_LARGE = 'CONTENT_TOO_LARGE',
  /** A content type fetch_webpage does not read (details: content_type, supported). */
  CONTENT_TYPE_UNSUPPORTED = 'CONTENT_TYPE_UNSUPPORTED',
  /** The target could not be reached or answered an HTTP error (details: status when it answered). */
  FETCH_FAILED = 'FETCH_FAILED',
  /** The target did not answer in full within the fetch timeout (details: timeout_ms). */
  FETCH_TIMEOUT = 'FETCH_TIMEOUT',
  /** web_search with no Exa key: neither the agent's EXA_API_KEY secret nor the service's config. */
  SEARCH_NOT_CONFIGURED = 'SEARCH_NOT_CONFIGURED',
  INTERNAL = 'INTERNAL',
}

/**
 * What a code says about the failure, beyond its name. Each property is one question a caller asks
 * of an error; every set of codes used to answer it (below) is derived from this table, never
 * written by hand.
 */
export interface ErrorCodeTraits {
  /** When the code is given (the API reference's wording; docs/public-api.md is generated from it). */
  readonly meaning: string;
  /** The same request may succeed later: the envelope's `retryable` flag unless the thrower says otherwise. */
  readonly retryable: boolean;
  /**
   * The provider could not take the call and the tool did not start: the call may go to the next
   * provider of the org's fallback list (never a tool's own failure, a timeout or a lost sandbox:
   * those may have had effects).
   */
  readonly fallback: boolean;
  /**
   * Proves the tool did not start (the provider could not take it, its environment is still being
   * built, its credentials could not be resolved): a call that failed so may run again.
   */
  readonly notStarted: boolean;
  /** An MCP connection with the same settings fails the same way: not worth another attempt. */
  readonly permanentForConnection: boolean;
  /** An MCP server's OAuth failure that discovering its metadata again cannot fix. */
  readonly noRediscovery: boolean;
  /** An MCP server waits for a person to authorize, not for the server: no backoff. */
  readonly awaitingUser: boolean;
  /**
   * The serving app is down or did not answer in time: a caller that must not go on without its
   * answer turns it into its own code (`RequestOptions.down`).
   */
  readonly dependencyDown: boolean;
  /**
   * A service could not be asked or could not answer (down, restarting, timed out, refused the
   * message), as against its answer about the request's content.
   */
  readonly infrastructure: boolean;
  /** A failure of the caller's making that a model can correct: an MCP tool error (isError), not a protocol error. */
  readonly toolLevel: boolean;
}

export type ErrorCodeTrait = Exclude<keyof ErrorCodeTraits, 'meaning'>;

/** The traits in the table's column order (docs and specs walk them in this order). */
export const ERROR_CODE_TRAITS: readonly ErrorCodeTrait[] = [
  'retryable',
  'fallback',
  'notStarted',
  'permanentForConnection',
  'noRediscovery',
  'awaitingUser',
  'dependencyDown',
  'infrastructure',
  'toolLevel',
];

function row(meaning: string, ...traits: ErrorCodeTrait[]): ErrorCodeTraits {
  const has = (t: ErrorCodeTrait) => traits.includes(t);
  return {
    meaning,
    retryable: has('retryable'),
    fallback: has('fallback'),
    notStarted: has('notStarted'),
    permanentForConnection: has('permanentForConnection'),
    noRediscovery: has('noRediscovery'),
    awaitingUser: has('awaitingUser'),
    dependencyDown: has('dependencyDown'),
    infrastructure: has('infrastructure'),
    toolLevel: has('toolLevel'),
  };
}

/** The one table of error codes: every code, what it means, and its traits (a trait not named is false). */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeTraits>> = {
  [ErrorCode.MALFORMED_MESSAGE]: row('The body is not UTF-8 JSON.', 'infrastructure'),
  [ErrorCode.CONTRACT_VIOLATION]: row(
    'Wrong shape, missing `org_id`, unknown field, text Postgres cannot store (a NUL or a lone UTF-16 surrogate, anywhere but in tool arguments), JSON nested deeper than 64 levels; `details.issues[]` names each path.',
    'infrastructure',
  ),
  [ErrorCode.PAYLOAD_TOO_LARGE]: row(
    "A request over the service's `MAX_REQUEST_BYTES` or NATS' max payload, or a reply that would not fit in one NATS message.",
    'infrastructure',
  ),
  [ErrorCode.UNAUTHENTICATED]: row(
    'No org token, or a malformed, forged, expired, revoked or deleted-org one; an internal subject without a valid service seal.',
    'infrastructure',
  ),
  [ErrorCode.FORBIDDEN]: row(
    "A valid token for another org than the payload's `org_id`, without the subject's scope, an operator token outside `auth.*`, a service the subject does not list as a caller.",
    'infrastructure',
  ),
  [ErrorCode.TOKEN_NOT_FOUND]: row("`auth.tokens.revoke` of a token that is not this org's."),
  [ErrorCode.TOOL_NOT_FOUND]: row("No such tool in this org (other orgs' tools are invisible)."),
  [ErrorCode.TOOL_NAME_CONFLICT]: row(
    '`tools.upsert` named a tool an external source owns (an `external_mcp` tool); `details.tool`, `tool_type`.',
  ),
  [ErrorCode.TOOL_READ_ONLY]: row(
    '`tools.upsert` or `tools.delete` of a built-in tool (`letta_builtin`, `letta_core`, `letta_memory_core`); `details.tool`, `tool_id`, `tool_type`.',
  ),
  [ErrorCode.TOOLSET_NOT_FOUND]: row('No toolset (published tool set) of this name in the org.'),
  [ErrorCode.SCHEMA_GENERATION_FAILED]: row(
    'The source cannot become a schema; `details.reason`, `line`, `function`, `parameter`.',
  ),
  [ErrorCode.SCHEMA_INVALID]: row("The tool's json_schema cannot check arguments.", 'toolLevel'),
  [ErrorCode.INVALID_ARGUMENTS]: row(
    "The args do not match the tool's schema (missing, wrong type, unknown); the tool is not run.",
    'toolLevel',
  ),
  [ErrorCode.BATCH_TOO_LARGE]: row(
    'A batch with more calls than the executor takes in one request (`EXECUTE_BATCH_MAX_CALLS`): nothing ran.',
  ),
  [ErrorCode.UNSUPPORTED_TOOL]: row('No executor for this tool type or source type yet.'),
  [ErrorCode.RUNNER_UNAVAILABLE]: row(
    'No runner is serving (answered at once, not after a timeout).',
    'retryable',
    'fallback',
    'notStarted',
  ),
  [ErrorCode.SERVICE_UNAVAILABLE]: row(
    'A service is down (or a dependency of it, such as its database).',
    'retryable',
    'dependencyDown',
    'infrastructure',
  ),
  [ErrorCode.SERVICE_RESTARTING]: row(
    'The service stopped (e.g. a rolling restart) before it could finish the request: retry it.',
    'retryable',
    'infrastructure',
  ),
  [ErrorCode.REQUEST_TIMEOUT]: row(
    'A service did not answer in time (e.g. a runner died mid-call).',
    'retryable',
    'dependencyDown',
    'infrastructure',
  ),
  [ErrorCode.REQUEST_CANCELLED]: row(
    "The caller cancelled the request (e.g. an MCP client's `notifications/cancelled`): its work was stopped, and a call's record ends `failed` with this code.",
  ),
  [ErrorCode.CREDENTIALS_UNAVAILABLE]: row(
    'The org\'s webhook failed with `fail_mode: "closed"` (`details.reason`: `timeout`, `connection`, `refused_address`, `redirect`, `http_status`, `too_large`, `invalid_reply`), or the credentials service did not answer; the tool is not run.',
    'retryable',
    'notStarted',
    'noRediscovery',
  ),
  [ErrorCode.SECRET_NOT_FOUND]: row(
    'No secret of that identity in this org.',
    'permanentForConnection',
    'noRediscovery',
  ),
  [ErrorCode.WEBHOOK_NOT_FOUND]: row('No webhook in this org.'),
  [ErrorCode.WEBHOOK_URL_REFUSED]: row('The webhook URL is not allowed (SSRF policy, scheme, credentials in the URL).'),
  [ErrorCode.SANDBOX_CONFIG_NOT_FOUND]: row('No sandbox config of that identity in this org.'),
  [ErrorCode.ENCRYPTION_KEY_MISSING]: row(
    'A stored value was sealed with a key that is not in the key ring (or does not open with it); the message names the key id.',
    'permanentForConnection',
  ),
  [ErrorCode.MCP_SERVER_NOT_FOUND]: row('No MCP server of that id or name in this org.'),
  [ErrorCode.MCP_SERVER_EXISTS]: row('An MCP server of that name exists in this org.'),
  [ErrorCode.MCP_TRANSPORT_DISABLED]: row(
    'Stdio servers are off here (`MCP_STDIO_ENABLED`).',
    'permanentForConnection',
  ),
  [ErrorCode.MCP_COMMAND_REFUSED]: row(
    'A stdio server whose program, arguments or env names are not in `MCP_STDIO_ALLOWED_COMMANDS`.',
  ),
  [ErrorCode.MCP_URL_REFUSED]: row(
    'The server (or OAuth token, or redirect target) URL is not http(s) or resolves to a private, loopback, link-local or metadata address that is not allowlisted.',
    'permanentForConnection',
    'noRediscovery',
  ),
  [ErrorCode.MCP_CONNECTION_FAILED]: row(
    'Connect, initialize or an OAuth request (metadata, registration, token) failed or timed out.',
    'retryable',
  ),
  [ErrorCode.MCP_TOOL_UNAVAILABLE]: row(
    'Reserved for an MCP server tool that cannot be called; no service gives it in this version.',
  ),
  [ErrorCode.MCP_OAUTH_FAILED]: row(
    'An OAuth flow failed: `mcp.oauth.complete` with an unknown, used or expired state; the authorization server refused the client, the code or the registration; metadata naming another resource; no way to register a client.',
  ),
  [ErrorCode.MCP_OAUTH_REAUTHORIZE]: row(
    'An authorization-code server has no usable token (refresh refused): authorize it again.',
    'noRediscovery',
    'awaitingUser',
  ),
  [ErrorCode.MCP_AUTHORIZATION_REQUIRED]: row(
    'An OAuth server needs a user: its refresh was refused (`details.reason: "reauthorize"`) or it asks for more scope (`"step_up"`, 403 `insufficient_scope`); `details.authorization_url` and `details.state` are a fresh authorization — open it, then `mcp.oauth.complete`; `servers.get` shows it as `pending_authorization` until then. An `account: "user"` server: the calling end user has not connected (or must again), the URL is theirs (`details.server_id`, `server_name`); a call without a `user_id` gets no URL.',
    'noRediscovery',
    'awaitingUser',
  ),
  [ErrorCode.CONNECTION_NOT_FOUND]: row('`connections.get`: the end user has not connected that MCP server.'),
  [ErrorCode.EXECUTION_NOT_FOUND]: row(
    "No execution of that id in this org (never created, another org's, or past its retention).",
  ),
  [ErrorCode.IDEMPOTENCY_CONFLICT]: row(
    'The `idempotency_key` was used (in its window) for another tool or other args; nothing ran; `details.execution_id`.',
  ),
  [ErrorCode.EXECUTION_IN_PROGRESS]: row(
    'A sync retry with the key of a call still queued or running did not see it finish within its own timeout; `details.execution_id` (nothing ran twice).',
    'retryable',
  ),
  [ErrorCode.EXECUTION_NOT_PENDING]: row(
    '`approve`/`deny` of an execution not waiting for approval (approved, denied or expired already); `details.status`.',
  ),
  [ErrorCode.EXECUTION_ALREADY_COMPLETED]: row(
    '`submit-result` for an execution that is not waiting for its client (a second submission, or a call Toolplane ran); `details.status`.',
  ),
  [ErrorCode.EXECUTOR_LOST]: row(
    'Outcome: the executor running the call died before recording its outcome; it was not run again (unless the tool is declared idempotent).',
  ),
  [ErrorCode.EXECUTION_DENIED]: row(
    'Outcome: a human denied the call (its `func_return` carries the reason).',
    'toolLevel',
  ),
  [ErrorCode.EXECUTION_EXPIRED]: row('Outcome: nobody approved or denied the call within its approval TTL.'),
  [ErrorCode.TOOL_EXCEPTION]: row('Outcome: the tool raised.'),
  [ErrorCode.LANGUAGE_UNAVAILABLE]: row(
    "`run_code` in a language the call's provider does not run; `details.language`, `provider`, `languages`.",
  ),
  [ErrorCode.EXECUTION_TIMEOUT]: row(
    'Outcome: the tool ran past its timeout (the process group is killed at the deadline).',
  ),
  [ErrorCode.OUTPUT_LIMIT_EXCEEDED]: row('Outcome: the tool wrote more output than the runner keeps.'),
  [ErrorCode.SANDBOX_FAILURE]: row('Outcome: the sandbox crashed, broke its protocol or could not be spawned.'),
  [ErrorCode.DEPENDENCY_INSTALL_FAILED]: row(
    'Outcome: pip or npm could not install a requirement; the message names it and quotes pip.',
  ),
  [ErrorCode.SANDBOX_LOST]: row(
    'Outcome: a remote sandbox died or vanished during the call (the tool may have started); the runner replaces it.',
  ),
  [ErrorCode.ENVIRONMENT_BUILDING]: row(
    "The tool's environment (its pip/npm requirements) is still being built: the call did not run; `details.provider`, `status`, `requirements_hash`, `progress?`; the build goes on (`tools.environment` tells when it is ready).",
    'retryable',
    'notStarted',
  ),
  [ErrorCode.PROVIDER_UNAVAILABLE]: row(
    "The provider cannot take calls now (unreachable, 5xx, no runner deployed for it); the org's fallback list applies.",
    'retryable',
    'fallback',
    'notStarted',
  ),
  [ErrorCode.PROVIDER_RATE_LIMITED]: row(
    "The provider is rate-limiting or out of quota; the org's fallback list applies.",
    'retryable',
    'fallback',
    'notStarted',
  ),
  [ErrorCode.PROVIDER_AUTH_FAILED]: row(
    "The provider refused the org's (or the runner's) credentials: fix the E2B_API_KEY / Modal token.",
    'notStarted',
  ),
  [ErrorCode.URL_SCHEME_UNSUPPORTED]: row('A URL whose scheme is not http or https; `details.scheme`.'),
  [ErrorCode.EGRESS_REFUSED]: row(
    "The SSRF policy refused the target (or a redirect's target): a private, loopback, link-local or other non-global address not on the operator's allowlist. Nothing was sent to it.",
  ),
  [ErrorCode.CONTENT_TOO_LARGE]: row(
    'The response is larger than the fetch cap (`details.limit_bytes`); the rest was not read.',
  ),
  [ErrorCode.CONTENT_TYPE_UNSUPPORTED]: row(
    'A content type fetch_webpage does not read; `details.content_type`, `supported`.',
  ),
  [ErrorCode.FETCH_FAILED]: row(
    'The target could not be reached or answered an HTTP error (`details.status` when it answered).',
    'retryable',
  ),
  [ErrorCode.FETCH_TIMEOUT]: row(
    'The target did not answer in full within the fetch timeout; `details.timeout_ms`.',
    'retryable',
  ),
  [ErrorCode.SEARCH_NOT_CONFIGURED]: row(
    "web_search with no Exa key: neither the agent's EXA_API_KEY secret nor the service's config.",
  ),
  [ErrorCode.INTERNAL]: row(
    'Anything unexpected; the message says nothing more, the trace id finds it.',
    'infrastructure',
  ),
};

/** The codes that have `trait`, derived from the table. */
export function codesWith(trait: ErrorCodeTrait): ReadonlySet<string> {
  return new Set((Object.values(ErrorCode) as ErrorCode[]).filter((c) => ERROR_CODES[c][trait]));
}

/** Retryable by default (`ToolplaneError.retryable` unless the thrower says otherwise). */
export const RETRYABLE_CODES = codesWith('retryable');
/** The errors after which a call may go to the next provider of the org's fallback list. */
export const FALLBACK_CODES = codesWith('fallback');
/** The errors that prove the tool did not start: a call that failed so may run again. */
export const NOT_STARTED_CODES = codesWith('notStarted');
/** MCP connection failures not worth another attempt: the same settings fail the same way. */
export const CONNECTION_PERMANENT_CODES = codesWith('permanentForConnection');
/** MCP OAuth failures another discovery cannot fix. */
export const NO_REDISCOVERY_CODES = codesWith('noRediscovery');
/** An MCP server waiting for a person to authorize: no backoff. */
export const AWAITING_USER_CODES = codesWith('awaitingUser');
/** The serving app is down or did not answer in time. */
export const DEPENDENCY_DOWN_CODES = codesWith('dependencyDown');
/** A service could not be asked or could not answer: an envelope error, never a tool's result. */
export const INFRASTRUCTURE_CODES = codesWith('infrastructure');
/** Failures of the caller's making a model can correct: a tool error, not a protocol error. */
export const TOOL_LEVEL_CODES = codesWith('toolLevel');

export function isRetryable(code: ErrorCode): boolean {
  return RETRYABLE_CODES.has(code);
}

export const ErrorBody = z.object({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  details: z.record(z.string(), z.unknown()).optional(),
  trace_id: z.string(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ErrorEnvelope = z.object({ error: ErrorBody });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/** The fields of a Toolplane error: the wire body's, `trace_id` only when one came with it. */
export interface ToolplaneErrorInit<C extends string = string> {
  code: C;
  message: string;
  retryable: boolean;
  details?: Record<string, unknown>;
  trace_id?: string;
}

/**
 * What a service's ToolplaneError and @toolplane/client's have in common: the envelope's field
 * names (`code`, `message`, `retryable`, `details`, `trace_id`) and the ES2022 `cause` of an error
 * it wraps. A cause stays in its process: the envelope is made of the body's fields only
 * (`toErrorBody`), `cause` is not enumerable (JSON.stringify leaves it out), and log lines and
 * spans carry the message, never the cause — so whatever a wrapped error says (a URL with a
 * token, a provider's raw answer) does not reach the bus or a reply.
 */
export class ToolplaneErrorBase<C extends string = string> extends Error {
  readonly code: C;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;
  /** The trace id of the envelope this error came in (absent on an error made here). */
  declare trace_id?: string;

  constructor(init: ToolplaneErrorInit<C>, options?: { cause?: unknown }) {
    super(init.message, options && 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'ToolplaneError';
    this.code = init.code;
    this.retryable = init.retryable;
    this.details = init.details;
    if (init.trace_id !== undefined) this.trace_id = init.trace_id;
  }
}

export interface ToolplaneErrorOptions {
  /** Overrides the code's default (`ERROR_CODES[code].retryable`). */
  retryable?: boolean;
  /** The error this one wraps (ES2022 `Error.cause`): kept for logs and debugging in this process, never sent. */
  cause?: unknown;
}

/**
 * The one exception type services throw. Messaging turns it into the wire envelope; any other
 * error becomes INTERNAL without its message or stack. `options` is the options bag
 * (`{ retryable?, cause? }`); a bare boolean is the older spelling of `{ retryable }`.
 */
export class ToolplaneError extends ToolplaneErrorBase<ErrorCode> {
  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options?: boolean | ToolplaneErrorOptions,
  ) {
    const o: ToolplaneErrorOptions = typeof options === 'boolean' ? { retryable: options } : (options ?? {});
    super(
      { code, message, details, retryable: o.retryable ?? isRetryable(code) },
      'cause' in o ? { cause: o.cause } : undefined,
    );
  }

  /** An error received from another service keeps its code, message, retry flag and trace id. */
  static fromBody(body: ErrorBody): ToolplaneError {
    const code = (Object.values(ErrorCode) as string[]).includes(body.code)
      ? (body.code as ErrorCode)
      : ErrorCode.INTERNAL;
    const err = new ToolplaneError(code, body.message, body.details, body.retryable);
    err.trace_id = body.trace_id;
    return err;
  }
}
