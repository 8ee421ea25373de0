import { SecretMasker } from './secret-masker';

describe('SecretMasker', () => {
  const sut = new SecretMasker(['sk-live-123456', 'sk-live-123456-extended', 'abc']);

  it('masks every occurrence, longest value first', () => {
    expect(sut.text('key=sk-live-123456-extended; again sk-live-123456.')).toBe('key=***; again ***.');
  });

  it('masks strings and keys inside a JSON value and leaves other types alone', () => {
    expect(
      sut.value({ token: 'Bearer sk-live-123456', n: 3, list: ['sk-live-123456', true], 'sk-live-123456': null }),
    ).toEqual({
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

describe('SecretMasker.maskedPrefix (mask before cutting)', () => {
  const secret = 'sk-live-SECRET-0123456789';
  const sut = new SecretMasker([secret]);

  it('masks a secret that straddles the cut whole: no first part of it is kept', () => {
    for (let cut = 1; cut < secret.length + 5; cut++) {
      const text = `${'x'.repeat(5)}${secret}${'y'.repeat(5)}`;
      const r = sut.maskedPrefix(text, 5 + cut);
      expect(r.truncated).toBe(true);
      expect(r.text).toBe(cut < 3 ? 'xxxxx' : `xxxxx***${'y'.repeat(Math.max(0, cut - secret.length))}`);
      for (let k = 4; k <= secret.length; k++) expect(r.text).not.toContain(secret.slice(0, k));
    }
  });

  it('never reads past the cut for plain text, even after masks made room', () => {
    const text = `${secret}${secret}${'z'.repeat(100)}`;
    const r = sut.maskedPrefix(text, 2 * secret.length + 10);
    expect(r).toEqual({ text: `******${'z'.repeat(10)}`, truncated: true });
  });

  it('keeps whole UTF-8 characters and says when nothing was cut', () => {
    expect(sut.maskedPrefix('héllo', 2)).toEqual({ text: 'h', truncated: true });
    expect(sut.maskedPrefix(`a${secret}b`, 100)).toEqual({ text: 'a***b', truncated: false });
    expect(sut.maskedPrefix('abc', 100, true)).toEqual({ text: 'abc', truncated: true });
    expect(sut.lookaheadBytes).toBe(secret.length);
  });
});
