import {
  AWAITING_USER_CODES,
  CONNECTION_PERMANENT_CODES,
  DEPENDENCY_DOWN_CODES,
  ERROR_CODE_TRAITS,
  ERROR_CODES,
  ErrorCode,
  FALLBACK_CODES,
  INFRASTRUCTURE_CODES,
  isRetryable,
  NO_REDISCOVERY_CODES,
  NOT_STARTED_CODES,
  RETRYABLE_CODES,
  TOOL_LEVEL_CODES,
  ToolplaneError,
  ToolplaneErrorBase,
} from './errors';

const sorted = (s: ReadonlySet<string>) => [...s].sort();

/**
 * The lists each set held when it was written by hand in its own file (before the one table):
 * deriving them from the table must not change a single member.
 */
describe('the error code table', () => {
  it('derives every set that was written by hand, member for member', () => {
    // libs/contracts/src/errors.ts RETRYABLE
    expect(sorted(RETRYABLE_CODES)).toEqual(
      [
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
      ].sort(),
    );
    // libs/contracts/src/errors.ts FALLBACK_CODES
    expect(sorted(FALLBACK_CODES)).toEqual(
      [ErrorCode.PROVIDER_UNAVAILABLE, ErrorCode.PROVIDER_RATE_LIMITED, ErrorCode.RUNNER_UNAVAILABLE].sort(),
    );
    // apps/executor/src/executions/tool-runner.ts NOT_STARTED_CODES
    expect(sorted(NOT_STARTED_CODES)).toEqual(
      [
        ...FALLBACK_CODES,
        ErrorCode.ENVIRONMENT_BUILDING,
        ErrorCode.CREDENTIALS_UNAVAILABLE,
        ErrorCode.PROVIDER_AUTH_FAILED,
      ].sort(),
    );
    // apps/executor/src/builtins/builtin-calls.ts INFRASTRUCTURE_CODES
    expect(sorted(INFRASTRUCTURE_CODES)).toEqual(
      [
        ErrorCode.SERVICE_UNAVAILABLE,
        ErrorCode.SERVICE_RESTARTING,
        ErrorCode.REQUEST_TIMEOUT,
        ErrorCode.INTERNAL,
        ErrorCode.CONTRACT_VIOLATION,
        ErrorCode.MALFORMED_MESSAGE,
        ErrorCode.PAYLOAD_TOO_LARGE,
        ErrorCode.UNAUTHENTICATED,
        ErrorCode.FORBIDDEN,
      ].sort(),
    );
    // apps/mcp-sync/src/connections/connection-pool.ts PERMANENT and AWAITING_USER
    expect(sorted(CONNECTION_PERMANENT_CODES)).toEqual(
      [
        ErrorCode.MCP_URL_REFUSED,
        ErrorCode.SECRET_NOT_FOUND,
        ErrorCode.MCP_TRANSPORT_DISABLED,
        ErrorCode.ENCRYPTION_KEY_MISSING,
      ].sort(),
    );
    expect(sorted(AWAITING_USER_CODES)).toEqual(
      [ErrorCode.MCP_AUTHORIZATION_REQUIRED, ErrorCode.MCP_OAUTH_REAUTHORIZE].sort(),
    );
    // apps/mcp-sync/src/connections/oauth-tokens.ts NO_REDISCOVERY
    expect(sorted(NO_REDISCOVERY_CODES)).toEqual(
      [
        ErrorCode.MCP_URL_REFUSED,
        ErrorCode.MCP_AUTHORIZATION_REQUIRED,
        ErrorCode.MCP_OAUTH_REAUTHORIZE,
        ErrorCode.SECRET_NOT_FOUND,
        ErrorCode.CREDENTIALS_UNAVAILABLE,
      ].sort(),
    );
    // libs/messaging/src/messaging-client.ts DOWN
    expect(sorted(DEPENDENCY_DOWN_CODES)).toEqual([ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.REQUEST_TIMEOUT].sort());
    // apps/mcp-gateway/src/calls/call-tool.service.ts TOOL_LEVEL
    expect(sorted(TOOL_LEVEL_CODES)).toEqual(
      [ErrorCode.INVALID_ARGUMENTS, ErrorCode.SCHEMA_INVALID, ErrorCode.EXECUTION_DENIED].sort(),
    );
  });

  it('has one row for every code, with a meaning and every trait', () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual(Object.values(ErrorCode).sort());
    for (const [code, row] of Object.entries(ERROR_CODES)) {
      expect({ code, meaning: row.meaning.length > 10 }).toEqual({ code, meaning: true });
      for (const trait of ERROR_CODE_TRAITS) expect(typeof row[trait]).toBe('boolean');
    }
  });

  it('keeps the traits consistent with one another', () => {
    for (const code of Object.values(ErrorCode)) {
      const row = ERROR_CODES[code];
      // A fallback proves the tool did not start; a provider that could not take the call may later.
      if (row.fallback)
        expect({ code, notStarted: row.notStarted, retryable: row.retryable }).toEqual({
          code,
          notStarted: true,
          retryable: true,
        });
      // A service that is down could not be asked: never its answer about the request.
      if (row.dependencyDown)
        expect({ code, infrastructure: row.infrastructure, retryable: row.retryable }).toEqual({
          code,
          infrastructure: true,
          retryable: true,
        });
      // Waiting for a person is not something another discovery fixes.
      if (row.awaitingUser) expect({ code, noRediscovery: row.noRediscovery }).toEqual({ code, noRediscovery: true });
      expect(isRetryable(code)).toBe(row.retryable);
    }
  });
});

describe('ToolplaneError', () => {
  it('takes its retry flag from the table unless told, by the options bag or the older boolean', () => {
    expect(new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'm').retryable).toBe(true);
    expect(new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'm', undefined, false).retryable).toBe(false);
    expect(new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, 'm', undefined, { retryable: true }).retryable).toBe(true);
    expect(new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, 'm', undefined, { cause: new Error('x') }).retryable).toBe(
      false,
    );
  });

  it('keeps the error it wraps as its ES2022 cause, and has none when it wraps nothing', () => {
    const original = new Error('connect ECONNREFUSED 10.0.0.1:443');
    const err = new ToolplaneError(
      ErrorCode.PROVIDER_UNAVAILABLE,
      'the provider is unreachable',
      { provider: 'e2b' },
      { cause: original },
    );
    expect(err.cause).toBe(original);
    expect(err.details).toEqual({ provider: 'e2b' });
    expect(err).toBeInstanceOf(ToolplaneErrorBase);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ToolplaneError');
    expect('cause' in new ToolplaneError(ErrorCode.INTERNAL, 'm')).toBe(false);
    // An explicit undefined cause is still a cause (as Error's own options bag has it).
    expect('cause' in new ToolplaneError(ErrorCode.INTERNAL, 'm', undefined, { cause: undefined })).toBe(true);
  });

  it('never serialises its cause: the cause is not enumerable and not in JSON', () => {
    const secret = new Error('GET https://api.example.com/?token=sk-live-123 failed');
    const err = new ToolplaneError(
      ErrorCode.FETCH_FAILED,
      'Could not fetch https://api.example.com',
      { url: 'https://api.example.com' },
      { cause: secret },
    );
    expect(Object.keys(err)).not.toContain('cause');
    expect(JSON.stringify(err)).not.toContain('sk-live-123');
    expect(JSON.stringify({ ...err })).not.toContain('sk-live-123');
    expect(err.message).not.toContain('sk-live-123');
  });

  it('keeps the trace id of an error received from another service under the envelope name', () => {
    const remote = ToolplaneError.fromBody({ code: 'TOOL_NOT_FOUND', message: 'm', retryable: false, trace_id: 'abc' });
    expect(remote.trace_id).toBe('abc');
    expect(remote.code).toBe(ErrorCode.TOOL_NOT_FOUND);
    expect('trace_id' in new ToolplaneError(ErrorCode.INTERNAL, 'm')).toBe(false);
  });
});
