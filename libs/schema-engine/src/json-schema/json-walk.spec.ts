import { jsonByteLength as sut } from './json-walk';

describe('jsonByteLength', () => {
  const exact = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

  it.each<[string, unknown]>([
    ['an empty object', {}],
    ['an empty array', []],
    ['scalars', [1, -2.5, 1e21, true, false, null, 'x']],
    ['escapes and non-ASCII', { 'k"\n': 'é😀\u0001\\\u2028', [String.fromCharCode(0xd800)]: 'lone \ud800 surrogate' }],
    ['nesting', { a: [{ b: [[], {}, [1, [2, [3]]]] }], c: { d: { e: 'f' } } }],
    ['what JSON drops or nulls', { a: undefined, b: () => 1, c: [undefined, () => 1], d: Number.NaN, e: Infinity }],
    ['a __proto__ key', JSON.parse('{"__proto__": {"type": "string"}}')],
  ])('is the UTF-8 length of JSON.stringify for %s', (_, value) => {
    expect(sut(value, Infinity)).toBe(exact(value));
  });

  it('stops counting past the limit, so a value shared 2^40 times costs only the limit', () => {
    let v: unknown = { type: 'string' };
    for (let i = 0; i < 40; i += 1) v = { a: v, b: v };
    const n = sut(v, 1000);
    expect(n).toBeGreaterThan(1000);
    expect(n).toBeLessThan(1100);
  });
});
