import { truncateReturn } from './return-value';

describe('truncateReturn', () => {
  it('keeps values within the limit untouched', () => {
    expect(truncateReturn('abc', 3)).toBe('abc');
    expect(truncateReturn({ a: 1 }, 100)).toEqual({ a: 1 });
    expect(truncateReturn(null, 10)).toBeNull();
  });

  it("cuts text over the limit and appends the seeds' note", () => {
    expect(truncateReturn('abcdef', 2)).toBe(
      'ab... [NOTE: function output was truncated since it exceeded the character limit (6 > 2)]',
    );
    expect(truncateReturn({ k: 'vvvv' }, 5)).toBe(
      '{"k":... [NOTE: function output was truncated since it exceeded the character limit (12 > 5)]',
    );
  });
});
