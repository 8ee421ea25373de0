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

const RETRYABLE: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.RUNNER_UNAVAILABLE,
  ErrorCode.SERVICE_UNAVAILABLE,
  ErrorCode.SERVICE_RESTARTING,
  ErrorCode.REQUEST_TIMEOUT,
  ErrorCode.CREDENTIALS_UNAVAILABLE,
  ErrorCode.MCP_CONNECTION_FAILED,
  ErrorCode.ENVIRONMENT_BUILDING,
  ErrorCode.PROVIDER_UNAVAILABLE,
  ErrorCode.PROVIDER_RATE_LIMITED,
  ErrorCode.EXECUTION_IN_PROGRESS,
  ErrorCode.FETCH_FAILED,
  ErrorCode.FETCH_TIMEOUT,
]);

/**
 * The errors after which a call may go to the next provider of the org's fallback list: the
 * provider could not take it and the tool did not start (never a tool's own failure, a timeout or
 * a lost sandbox: those may have had effects).
 */
export const FALLBACK_CODES: ReadonlySet<string> = new Set([ErrorCode.PROVIDER_UNAVAILABLE, ErrorCode.PROVIDER_RATE_LIMITED, ErrorCode.RUNNER_UNAVAILABLE]);

export function isRetryable(code: ErrorCode): boolean {
  return RETRYABLE.has(code);
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

/**
 * The one exception type services throw. Messaging turns it into the wire envelope; any other
 * error becomes INTERNAL without its message or stack.
 */
export class ToolplaneError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    retryable?: boolean,
  ) {
    super(message);
    this.name = 'ToolplaneError';
    this.retryable = retryable ?? isRetryable(code);
  }

  /** An error received from another service keeps its code, message and retry flag. */
  static fromBody(body: ErrorBody): ToolplaneError {
    const code = (Object.values(ErrorCode) as string[]).includes(body.code) ? (body.code as ErrorCode) : ErrorCode.INTERNAL;
    const err = new ToolplaneError(code, body.message, body.details, body.retryable);
    err.remoteTraceId = body.trace_id;
    return err;
  }

  remoteTraceId?: string;
}
