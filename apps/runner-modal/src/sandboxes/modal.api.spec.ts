import { ErrorCode } from '@toolplane/contracts';
import { NotFoundError, ResourceExhaustedError, TimeoutError } from 'modal';
import { ClientError, Status } from 'nice-grpc';
import { isDeadline, isSandboxGone, providerError } from './modal.api';
import { wholeSecondsMs } from './modal.provider';

describe('providerError', () => {
  const account = { tokenId: 'ak-org-token', tokenSecret: 'as-org-secret-123' };
  const sut = (e: unknown) => providerError(e, account, 'creating a sandbox');
  const grpc = (code: Status, details = 'nope') =>
    new ClientError('/modal.client.ModalClient/SandboxCreateV2', code, details);

  it('maps Modal failures to typed codes: auth, exhausted capacity, a gone sandbox, the rest unavailable', () => {
    expect(sut(grpc(Status.UNAUTHENTICATED)).code).toBe(ErrorCode.PROVIDER_AUTH_FAILED);
    expect(sut(grpc(Status.PERMISSION_DENIED)).code).toBe(ErrorCode.PROVIDER_AUTH_FAILED);
    expect(sut(grpc(Status.RESOURCE_EXHAUSTED)).code).toBe(ErrorCode.PROVIDER_RATE_LIMITED);
    expect(sut(new ResourceExhaustedError('Insufficient capacity to create sandbox.')).code).toBe(
      ErrorCode.PROVIDER_RATE_LIMITED,
    );
    expect(sut(new NotFoundError('gone')).code).toBe(ErrorCode.SANDBOX_LOST);
    expect(sut(grpc(Status.UNAVAILABLE)).code).toBe(ErrorCode.PROVIDER_UNAVAILABLE);
    expect(sut(new Error('connect ECONNREFUSED')).code).toBe(ErrorCode.PROVIDER_UNAVAILABLE);
  });

  it('never carries the token', () => {
    const e = sut(grpc(Status.UNAUTHENTICATED, `token ${account.tokenId}:${account.tokenSecret} refused`));
    expect(e.message).not.toContain(account.tokenSecret);
    expect(e.message).not.toContain(account.tokenId);
    expect(e.details).toEqual({ provider: 'modal' });
  });

  it("tells a gone sandbox and the SDK's plain deadline errors apart", () => {
    expect(isSandboxGone(grpc(Status.NOT_FOUND))).toBe(true);
    expect(isSandboxGone(grpc(Status.UNAVAILABLE))).toBe(false);
    expect(isDeadline(new Error('Deadline exceeded while waiting for exec 1234'))).toBe(true);
    expect(isDeadline(new TimeoutError('Timeout expired'))).toBe(true);
    expect(isDeadline(new Error('something else'))).toBe(false);
  });

  it('rounds exec timeouts up to whole seconds (Modal refuses anything else)', () => {
    expect(wholeSecondsMs(1)).toBe(1000);
    expect(wholeSecondsMs(1000)).toBe(1000);
    expect(wholeSecondsMs(11_500)).toBe(12_000);
  });
});
