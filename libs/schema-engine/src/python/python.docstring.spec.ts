import {
  cleandoc,
  describe as describeDoc,
  parseDocstring as sut,
  scanTypedArgName,
  typedArgName,
} from './python.docstring';
import { decodeStringLiteral } from './python.strings';

describe('parseDocstring', () => {
  it('splits the summary from the long description and reads Args entries', () => {
    const doc = sut(
      'Summary line.\n    More text\n    here.\n\n    Args:\n        a (int): First.\n        b: Second\n            continued.\n\n    Returns:\n        int: x\n    ',
    );
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

  // Issue 12: these took ~10 s (quadratic backtracking) at 100 KB; at the contract's 256 KiB source
  // limit the old pattern needed minutes (jest's timeout). Bounded by size; no duration is asserted.
  it('reads an Args entry that is one very long line in one pass', () => {
    const spaces = sut(`F.\n\nArgs:\n    x${' '.repeat(250_000)}: y\n    z: Z.\n`);
    expect([...spaces.params]).toEqual([
      ['x', 'y'],
      ['z', 'Z.'],
    ]);
    const parens = sut(`F.\n\nArgs:\n    ${'a ('.repeat(85_000)}: y\n    z (int): Z.\n`);
    expect(parens.params.get('a ('.repeat(85_000).trim())).toBe('y');
    expect(parens.params.get('z')).toBe('Z.');
  });

  it('strips a long run of blank lines inside an entry in one pass', () => {
    const doc = sut(`F.\n\nArgs:\n    x: X.${'\n'.repeat(250_000)}      more\n    z: Z.\n`);
    expect(doc.params.get('x')).toBe('X.\nmore'); // blank lines of a continuation go, as in cleandoc
    expect(doc.params.get('z')).toBe('Z.');
  });

  it('cleans indentation like inspect.cleandoc', () => {
    expect(cleandoc('  first\n      a\n        b\n\n')).toBe('first\na\n  b');
    expect(cleandoc('\n\n   x\n')).toBe('x');
  });
});

describe('typedArgName (the pattern up to 64 characters, scanTypedArgName beyond)', () => {
  const PATTERN = /^\s*(.+?)\s*\(\s*(.*\S)\s*\)/; // docstring_parser's, quadratic on long lines

  it.each<[string, string | null]>([
    ['a (int)', 'a'],
    ['  a b  ( int ) trailing', 'a b'],
    ['a (int', null],
    ['(int)', null],
    [' (int)', ' '],
    ['a (\n int \n)', 'a'],
    ['a\n(int)', 'a'],
    ['a\nb (int)', null],
  ])('reads %j as %j', (entry, name) => {
    expect(typedArgName(entry)).toBe(name);
    expect(scanTypedArgName(entry)).toBe(name);
    const padded = `${' '.repeat(100)}${entry}`; // long: scanned (the group keeps its place)
    expect(typedArgName(padded)).toBe(PATTERN.exec(padded)?.[1] ?? null);
  });

  it('scans exactly what the pattern captures, on 50 000 generated entries', () => {
    let seed = 12;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = ['a', 'b', ' ', ' ', '(', ')', '(', ')', '\n', '\t', '\r', '\u2028', '\u00a0', ':'];
    let matched = 0;
    // Mismatches collected and asserted once: 50 000 expect() calls cost jest ~25 s on their own.
    const mismatches: Array<[string, string | null, string | null]> = [];
    for (let i = 0; i < 50_000; i += 1) {
      const entry = Array.from(
        { length: Math.floor(rand() * 14) },
        () => alphabet[Math.floor(rand() * alphabet.length)],
      ).join('');
      const m = PATTERN.exec(entry);
      if (m) matched += 1;
      const want = m ? m[1]! : null;
      const got = scanTypedArgName(entry);
      if (got !== want) mismatches.push([entry, got, want]);
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(matched).toBeGreaterThan(5_000); // the generated entries exercise both outcomes
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
