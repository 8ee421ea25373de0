import { ErrorCode } from '@toolplane/contracts';
import { AuthenticationError, RateLimitError, SandboxError, ServiceBusyError, SandboxNotFoundError } from 'e2b';
import { isSandboxGone, providerError } from './e2b.api';

describe('providerError', () => {
  const account = { apiKey: 'e2b_secret_key_123' };
  const sut = (e: unknown) => providerError(e, account, 'creating a sandbox');
  const withStatus = (status: number) => Object.assign(new SandboxError(`${status}: nope`), { statusCode: status });

  it('maps E2B failures to typed codes: 401 auth, 429 rate limit, 5xx and unreachable unavailable', () => {
    expect(sut(new AuthenticationError('Unauthorized')).code).toBe(ErrorCode.PROVIDER_AUTH_FAILED);
    expect(sut(withStatus(403)).code).toBe(ErrorCode.PROVIDER_AUTH_FAILED);
    expect(sut(new RateLimitError('Rate limit exceeded')).code).toBe(ErrorCode.PROVIDER_RATE_LIMITED);
    expect(sut(new ServiceBusyError('busy')).code).toBe(ErrorCode.PROVIDER_UNAVAILABLE);
    expect(sut(withStatus(500)).code).toBe(ErrorCode.PROVIDER_UNAVAILABLE);
    expect(sut(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })).code).toBe(
      ErrorCode.PROVIDER_UNAVAILABLE,
    );
    expect(sut(withStatus(400)).code).toBe(ErrorCode.SANDBOX_FAILURE);
  });

  it('retryable for rate limits and unavailability only; never carries the API key', () => {
    expect(sut(new RateLimitError('x')).retryable).toBe(true);
    expect(sut(new AuthenticationError('x')).retryable).toBe(false);
    const e = sut(new AuthenticationError(`key ${account.apiKey} refused`));
    expect(e.message).not.toContain(account.apiKey);
    expect(e.details).toEqual({ provider: 'e2b' });
  });

  it('tells a gone sandbox from other failures', () => {
    expect(isSandboxGone(new SandboxNotFoundError('sandbox x not found'))).toBe(true);
    expect(isSandboxGone(withStatus(404))).toBe(true);
    expect(isSandboxGone(withStatus(500))).toBe(false);
    expect(isSandboxGone(new Error('terminated'))).toBe(false);
  });
});
