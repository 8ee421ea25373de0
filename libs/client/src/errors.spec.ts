import { ToolplaneErrorBase, ToolplaneError as ServiceError, ErrorCode } from '@toolplane/contracts';
import { ClientErrorCode, ToolplaneError } from './errors';

describe("the client's ToolplaneError", () => {
  it("has the same definition and field names as the services' error, plus the subject called", () => {
    const body = {
      code: 'TOOL_NOT_FOUND',
      message: 'No tool x',
      retryable: false,
      details: { name: 'x' },
      trace_id: 'abc',
    };
    const sut = ToolplaneError.fromEnvelope('toolplane.v1.tools.get', body);
    const service = ServiceError.fromBody(body);
    expect(sut).toBeInstanceOf(ToolplaneErrorBase);
    expect(service).toBeInstanceOf(ToolplaneErrorBase);
    const fields = (e: ToolplaneErrorBase) => ({
      name: e.name,
      code: e.code,
      message: e.message,
      retryable: e.retryable,
      details: e.details,
      trace_id: e.trace_id,
    });
    expect(fields(sut)).toEqual(fields(service));
    expect(sut.subject).toBe('toolplane.v1.tools.get');
    expect(service.code).toBe(ErrorCode.TOOL_NOT_FOUND);
  });

  it('keeps a transport failure as its cause, and an empty trace id when none is known', () => {
    const failure = new Error('no responders available');
    const sut = ToolplaneError.fromTransport('toolplane.v1.tools.get', failure, '');
    expect(sut.code).toBe(ClientErrorCode.NO_RESPONDERS);
    expect(sut.retryable).toBe(true);
    expect(sut.cause).toBe(failure);
    expect(new ToolplaneError({ code: 'X', message: 'm', retryable: false, subject: 's' }).trace_id).toBe('');
    expect('cause' in new ToolplaneError({ code: 'X', message: 'm', retryable: false, subject: 's' })).toBe(false);
  });
});
