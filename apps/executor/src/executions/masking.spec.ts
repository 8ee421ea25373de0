import { SecretMasker } from './masking';

describe('SecretMasker', () => {
  const sut = new SecretMasker(['sk-live-123456', 'sk-live-123456-extended', 'abc']);

  it('masks every occurrence, longest value first', () => {
    expect(sut.text('key=sk-live-123456-extended; again sk-live-123456.')).toBe('key=***; again ***.');
  });

  it('masks strings and keys inside a JSON value and leaves other types alone', () => {
    expect(sut.value({ token: 'Bearer sk-live-123456', n: 3, list: ['sk-live-123456', true], 'sk-live-123456': null })).toEqual({
      token: 'Bearer ***',
      n: 3,
      list: ['***', true],
      '***': null,
    });
  });

  it('does not mask values too short to be told from ordinary text', () => {
    expect(sut.text('abc def')).toBe('abc def');
    expect(new SecretMasker([]).value('anything')).toBe('anything');
  });
});
