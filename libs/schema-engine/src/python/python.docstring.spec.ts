import { cleandoc, describe as describeDoc, parseDocstring as sut } from './python.docstring';
import { decodeStringLiteral } from './python.strings';

describe('parseDocstring', () => {
  it('splits the summary from the long description and reads Args entries', () => {
    const doc = sut('Summary line.\n    More text\n    here.\n\n    Args:\n        a (int): First.\n        b: Second\n            continued.\n\n    Returns:\n        int: x\n    ');
    expect(doc.shortDescription).toBe('Summary line.');
    expect(doc.longDescription).toBe('More text\nhere.');
    expect([...doc.params]).toEqual([
      ['a', 'First.'],
      ['b', 'Second\ncontinued.'],
    ]);
    expect(describeDoc(doc)).toBe('Summary line.\n\nMore text\nhere.');
  });

  it('treats a wrapped summary as summary + long description, as docstring_parser does', () => {
    expect(describeDoc(sut('First half\nsecond half.'))).toBe('First half\n\nsecond half.');
  });

  it('only recognises section titles at the start of a line, with a colon', () => {
    const doc = sut('Do it.\n\nThe Args: here are prose.\nArgs\n\nArgs:\n    x: X.\n');
    expect(doc.longDescription).toBe('The Args: here are prose.\nArgs');
    expect(doc.params.get('x')).toBe('X.');
  });

  it('reads Attributes separately from Args and ignores unindented sections', () => {
    const doc = sut('M.\n\nAttributes:\n    city: The city.\n\nArgs:\nx: not indented\n');
    expect(doc.attributes.get('city')).toBe('The city.');
    expect(doc.params.size).toBe(0);
  });

  it('cleans indentation like inspect.cleandoc', () => {
    expect(cleandoc('  first\n      a\n        b\n\n')).toBe('first\na\n  b');
    expect(cleandoc('\n\n   x\n')).toBe('x');
  });
});

describe('decodeStringLiteral', () => {
  it.each<[string, string | null]>([
    ['"a\\nb"', 'a\nb'],
    ["'it\\'s'", "it's"],
    ['"""tri\nple"""', 'tri\nple'],
    ['r"\\d+"', '\\d+'],
    ['u"\\u00e9\\x41\\101\\U0001F600"', 'éAA😀'],
    ['"keep \\q and \\N{BULLET}"', 'keep \\q and \\N{BULLET}'],
    ['"line \\\ncontinued"', 'line continued'],
    ['f"x{1}"', null],
    ['b"x"', null],
    ['"unterminated', null],
  ])('decodes %s', (literal, value) => {
    expect(decodeStringLiteral(literal)).toBe(value);
  });
});
