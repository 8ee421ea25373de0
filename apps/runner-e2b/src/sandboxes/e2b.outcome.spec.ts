import { ErrorCode } from '@toolplane/contracts';
import { outcomeOf, type RunReport } from '@toolplane/sandbox';

describe('outcomeOf (the launcher report → the call outcome)', () => {
  const nonce = 'n'.repeat(32);
  const call = { functionName: 'f', timeoutMs: 500 };
  const report = (o: Partial<RunReport>): RunReport => ({
    v: 1,
    nonce,
    lane: 0,
    exit: 0,
    signal: null,
    timed_out: false,
    output_limit: false,
    frame: null,
    frame_too_large: false,
    stdout_bytes: 0,
    stderr_bytes: 0,
    dirty: [],
    proved_at: 1,
    ...o,
  });
  const sut = (o: Partial<RunReport>) => outcomeOf(report(o), nonce, call, 1024);

  it("takes the harness's frame when it carries this call's nonce", () => {
    expect(sut({ frame: `{"v":1,"nonce":"${nonce}","status":"success","value":{"a":1}}\n` })).toEqual({
      status: 'success',
      value: { a: 1 },
    });
    expect(
      sut({ frame: `{"v":1,"nonce":"${nonce}","status":"error","type":"ValueError","message":"bad"}\n` }).error,
    ).toEqual({ code: ErrorCode.TOOL_EXCEPTION, type: 'ValueError', message: 'bad' });
  });

  it('refuses a frame with another nonce or two frames: a protocol failure, never a result', () => {
    expect(sut({ frame: `{"v":1,"nonce":"other","status":"success","value":1}\n` }).error?.code).toBe(
      ErrorCode.SANDBOX_FAILURE,
    );
    const one = `{"v":1,"nonce":"${nonce}","status":"success","value":1}\n`;
    expect(sut({ frame: one + one }).error?.type).toBe('ProtocolError');
  });

  it('names timeouts, output limits and crashes like runner-local', () => {
    expect(sut({ timed_out: true, signal: 'SIGKILL', exit: null }).error).toEqual({
      code: ErrorCode.EXECUTION_TIMEOUT,
      type: 'TimeoutError',
      message: 'Function f timed out after 500 ms',
    });
    expect(sut({ output_limit: true }).error?.code).toBe(ErrorCode.OUTPUT_LIMIT_EXCEEDED);
    expect(sut({ frame_too_large: true, frame: null }).error?.code).toBe(ErrorCode.OUTPUT_LIMIT_EXCEEDED);
    expect(sut({ frame: '', exit: 3 }).error).toMatchObject({
      code: ErrorCode.SANDBOX_FAILURE,
      message: 'the interpreter exited with code 3 before returning a result',
    });
  });
});
