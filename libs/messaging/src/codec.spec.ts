import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { z } from 'zod';
import { decodeJson, encodeJson, parseContract } from './codec';
import { toErrorBody } from './error-body';
import { streamName, withPrefix } from './subjects';

describe('codec', () => {
  it('round-trips JSON and refuses bytes that are not JSON or not UTF-8', () => {
    expect(decodeJson(encodeJson({ a: [1, 'é'] }))).toEqual({ a: [1, 'é'] });
    expect(() => decodeJson(new TextEncoder().encode('{nope'))).toThrow(
      expect.objectContaining({ code: ErrorCode.MALFORMED_MESSAGE }),
    );
    expect(() => decodeJson(new Uint8Array([0xff, 0xfe]))).toThrow(/UTF-8/);
  });

  it('reports every contract issue with its path', () => {
    const sut = () =>
      parseContract(z.object({ a: z.string(), b: z.object({ c: z.number() }) }), { a: 1, b: { c: 'x' } }, 'Request');
    try {
      sut();
      throw new Error('should have thrown');
    } catch (e) {
      expect(e).toBeInstanceOf(ToolplaneError);
      const err = e as ToolplaneError;
      expect(err.code).toBe(ErrorCode.CONTRACT_VIOLATION);
      expect((err.details!.issues as Array<{ path: string }>).map((i) => i.path)).toEqual(['a', 'b.c']);
    }
  });

  it('never leaks an unknown error message or stack into the envelope', () => {
    const body = toErrorBody(new Error('password=hunter2 at /srv/app.js:1'), 'abc');
    expect(body).toEqual({ code: 'INTERNAL', message: 'Internal error', retryable: false, trace_id: 'abc' });
    expect(toErrorBody(new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, 'No tool x'), 't')).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      retryable: false,
    });
  });

  it("puts only the body's fields of a wrapping error in the envelope: never its cause", () => {
    const cause = new Error('GET https://api.example.com/?token=sk-live-123 failed');
    const err = new ToolplaneError(
      ErrorCode.FETCH_FAILED,
      'Could not fetch https://api.example.com',
      { url: 'https://api.example.com' },
      { cause },
    );
    const body = toErrorBody(err, 't');
    expect(body).toEqual({
      code: 'FETCH_FAILED',
      message: 'Could not fetch https://api.example.com',
      retryable: true,
      details: { url: 'https://api.example.com' },
      trace_id: 't',
    });
    expect(new TextDecoder().decode(encodeJson({ error: body }))).not.toContain('sk-live-123');
    // An unknown error wrapped as INTERNAL says nothing of what it wraps either.
    expect(
      toErrorBody(new ToolplaneError(ErrorCode.INTERNAL, 'Internal error', undefined, { cause }), 't').message,
    ).toBe('Internal error');
  });

  it('answers SERVICE_UNAVAILABLE (retryable, nothing of the cause) when a dependency is down', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    for (const e of [refused, shutdown, new Error('Connection terminated unexpectedly')]) {
      expect(toErrorBody(e, 't')).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        message: 'A dependency of the service is unavailable: retry later',
        retryable: true,
        trace_id: 't',
      });
    }
    expect(toErrorBody(Object.assign(new Error('duplicate key'), { code: '23505' }), 't').code).toBe('INTERNAL');
  });

  it('prefixes subjects and stream names only when a prefix is set', () => {
    expect(withPrefix('', 'toolplane.v1.tools.get')).toBe('toolplane.v1.tools.get');
    expect(withPrefix('t1', 'toolplane.v1.tools.get')).toBe('t1.toolplane.v1.tools.get');
    expect(streamName('a.b', 'TOOLPLANE_EVENTS')).toBe('a_b_TOOLPLANE_EVENTS');
  });
});
