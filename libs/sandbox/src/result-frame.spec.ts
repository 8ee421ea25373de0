import { parseResultFrame } from './result-frame';

const nonce = 'abc123';
const line = (o: unknown): Buffer => Buffer.from(`${JSON.stringify(o)}\n`);

describe('parseResultFrame', () => {
  it('accepts one success frame with the nonce', () => {
    expect(parseResultFrame(line({ v: 1, nonce, status: 'success', value: { a: [1] } }), nonce)).toEqual({
      ok: true,
      frame: { status: 'success', value: { a: [1] } },
    });
  });

  it('accepts one error frame with the nonce', () => {
    expect(parseResultFrame(line({ v: 1, nonce, status: 'error', type: 'ValueError', message: 'x' }), nonce)).toEqual({
      ok: true,
      frame: { status: 'error', type: 'ValueError', message: 'x' },
    });
  });

  it.each([
    ['nothing', Buffer.alloc(0), 'no result frame'],
    [
      'a foreign nonce',
      line({ v: 1, nonce: 'other', status: 'success', value: 1 }),
      "the result frame does not carry this run's nonce",
    ],
    [
      'garbage before the frame',
      Buffer.concat([Buffer.from('garbage\n'), line({ v: 1, nonce, status: 'success', value: 1 })]),
      'the result channel must carry exactly one frame',
    ],
    [
      'two frames',
      Buffer.concat([
        line({ v: 1, nonce, status: 'success', value: 1 }),
        line({ v: 1, nonce, status: 'success', value: 2 }),
      ]),
      'the result channel must carry exactly one frame',
    ],
    [
      'an unterminated frame',
      Buffer.from(JSON.stringify({ v: 1, nonce, status: 'success', value: 1 })),
      'the result channel must carry exactly one frame',
    ],
    ['invalid JSON', Buffer.from('{nope\n'), 'the result frame is not JSON'],
    ['a non-object', line([1]), 'the result frame is not an object'],
    ['another version', line({ v: 2, nonce, status: 'success', value: 1 }), 'unknown result frame version'],
    ['a success without value', line({ v: 1, nonce, status: 'success' }), 'malformed result frame'],
    ['an error without type', line({ v: 1, nonce, status: 'error', message: 'x' }), 'malformed result frame'],
  ])('rejects %s', (_name, raw, reason) => {
    expect(parseResultFrame(raw, nonce)).toEqual({ ok: false, reason });
  });
});
