import { ClientErrorCode, ToolplaneError } from '@toolplane/client';

/** A mistake in the command line or the configuration (exit code 2). */
export class UsageError extends Error {}

/** Exit codes: what a script can branch on. */
export const ExitCode = {
  OK: 0,
  /** The operation failed (an error reply, a failed check, an invalid schema, a failed tool run). */
  FAILED: 1,
  USAGE: 2,
  NOT_FOUND: 3,
  /** No or a bad token, or one without the scope. */
  AUTH: 4,
  /** Toolplane is unreachable or unavailable (retryable errors). */
  UNAVAILABLE: 5,
} as const;

/** The exit code of a failure: what a script can branch on. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError) return ExitCode.USAGE;
  if (e instanceof ToolplaneError) {
    if (e.code.endsWith('_NOT_FOUND')) return ExitCode.NOT_FOUND;
    if (e.code === 'UNAUTHENTICATED' || e.code === 'FORBIDDEN') return ExitCode.AUTH;
    if (e.code === ClientErrorCode.CONTRACT_VIOLATION) return ExitCode.USAGE;
    if (e.retryable || e.code === ClientErrorCode.NO_RESPONDERS) return ExitCode.UNAVAILABLE;
    return ExitCode.FAILED;
  }
  const code = (e as { code?: string })?.code;
  if (code === 'CONNECTION_REFUSED' || /connection refused|ECONNREFUSED/i.test(String((e as Error)?.message)))
    return ExitCode.UNAVAILABLE;
  return ExitCode.FAILED;
}
