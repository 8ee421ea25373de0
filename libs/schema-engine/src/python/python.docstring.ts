/**
 * Google-style docstring parsing, following the behaviour of the `docstring_parser` package that
 * Letta uses: the description is everything before the first section title, split into a
 * one-line summary and a long description; `Args:` entries are `name (type): text` or
 * `name: text`, with indented continuation lines.
 */

export interface ParsedDocstring {
  shortDescription: string | null;
  longDescription: string | null;
  /** Args / Arguments / Parameters / Params entries by name. */
  params: Map<string, string>;
  /** Attributes entries by name (used for model fields). */
  attributes: Map<string, string>;
}

const SECTION_KINDS: Record<string, 'param' | 'attribute' | 'other'> = {
  Arguments: 'param',
  Args: 'param',
  Parameters: 'param',
  Params: 'param',
  Attributes: 'attribute',
  Raises: 'other',
  Exceptions: 'other',
  Except: 'other',
  Example: 'other',
  Examples: 'other',
  Returns: 'other',
  Yields: 'other',
};

// Linear: `^` (multiline) only starts a match at a line start, and `[ \t…]*$` gives back at most
// what it took on that line. (Issue 12 audited every pattern in this engine: the others are
// anchored at the start or match fixed text; of the two that backtracked, /\n+$/ is now a scan
// and the typed-entry pattern reads only short entries, see typedArgName.)
const TITLE = new RegExp(`^(${Object.keys(SECTION_KINDS).join('|')}):[ \\t\\r\\f\\v]*$`, 'gm');

/** Python's `str.expandtabs(8)` for one line. */
function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  for (const ch of line) {
    if (ch === '\t') out += ' '.repeat(8 - (out.length % 8));
    else out += ch;
  }
  return out;
}

/** Python's `inspect.cleandoc`: drop the common indentation and surrounding blank lines. */
export function cleandoc(doc: string): string {
  const lines = doc.split('\n').map(expandTabs);
  let margin = Infinity;
  for (let i = 1; i < lines.length; i += 1) {
    const content = lines[i].trimStart();
    if (content.length > 0) margin = Math.min(margin, lines[i].length - content.length);
  }
  lines[0] = lines[0].trimStart();
  if (margin !== Infinity) for (let i = 1; i < lines.length; i += 1) lines[i] = lines[i].slice(margin);
  let end = lines.length;
  while (end > 0 && lines[end - 1] === '') end -= 1;
  // Counted, then cut once: shift() per blank line is quadratic on a long run of them (8 s at 250 000).
  let start = 0;
  while (start < end && lines[start] === '') start += 1;
  return lines.slice(start, end).join('\n');
}

/** Drops leading and trailing '\n's (a scan: `/\n+$/` is quadratic on a long run of '\n' before text). */
function stripNewlines(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s.charCodeAt(start) === 10) start += 1;
  while (end > start && s.charCodeAt(end - 1) === 10) end -= 1;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

export function parseDocstring(raw: string): ParsedDocstring {
  const result: ParsedDocstring = {
    shortDescription: null,
    longDescription: null,
    params: new Map(),
    attributes: new Map(),
  };
  if (!raw) return result;
  const text = cleandoc(raw);

  const titles = [...text.matchAll(TITLE)];
  const descChunk = titles.length > 0 ? text.slice(0, titles[0].index) : text;
  const newline = descChunk.indexOf('\n');
  const first = newline === -1 ? descChunk : descChunk.slice(0, newline);
  result.shortDescription = first.length > 0 ? first : null;
  if (newline !== -1) result.longDescription = descChunk.slice(newline + 1).trim() || null;

  // Later sections with the same title replace earlier ones, as in docstring_parser.
  const chunks = new Map<string, string>();
  titles.forEach((m, j) => {
    const start = (m.index ?? 0) + m[0].length;
    const end = j + 1 < titles.length ? (titles[j + 1].index ?? text.length) : text.length;
    chunks.set(m[1], stripNewlines(text.slice(start, end)));
  });

  for (const [title, chunk] of chunks) {
    const kind = SECTION_KINDS[title];
    if (kind === 'other') continue;
    const target = kind === 'param' ? result.params : result.attributes;
    for (const [name, description] of parseEntries(chunk)) if (!target.has(name)) target.set(name, description);
  }
  return result;
}

/** Entries of an Args-like section: each starts on a line at the section's own indentation. */
function parseEntries(chunk: string): Array<[string, string]> {
  const indent = /^[ \t]+/.exec(chunk)?.[0];
  if (!indent) return [];
  const lines = chunk.split('\n');
  const entries: string[] = [];
  for (const line of lines) {
    if (line.startsWith(indent) && line.length > indent.length && !/\s/.test(line[indent.length])) {
      entries.push(line.slice(indent.length));
    } else if (entries.length > 0) {
      entries[entries.length - 1] += '\n' + line;
    }
  }
  const out: Array<[string, string]> = [];
  for (const entry of entries) {
    const part = stripNewlines(entry);
    const colon = part.indexOf(':');
    if (colon === -1) continue;
    const before = part.slice(0, colon);
    let desc = part.slice(colon + 1);
    if (desc.startsWith(' ')) desc = desc.slice(1);
    const nl = desc.indexOf('\n');
    if (nl !== -1) desc = desc.slice(0, nl) + '\n' + cleandoc(desc.slice(nl + 1));
    desc = stripNewlines(desc);
    const name = (typedArgName(before) ?? before).trim();
    out.push([name, desc]);
  }
  return out;
}

/** `\s` in a JavaScript regular expression, by char code (a regex call per character costs more than the scan). */
function isSpaceCode(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
/** Characters `.` does not match in a JavaScript (and Python) regular expression. */
const isLineTerminator = (ch: string): boolean => ch === '\n' || ch === '\r' || ch === '\u2028' || ch === '\u2029';

/** docstring_parser's typed-entry pattern: its backtracking is quadratic in the entry's length. */
const TYPED_ARG = /^\s*(.+?)\s*\(\s*(.*\S)\s*\)/;
/** Entries up to this long use the pattern (at most ~SHORT_ENTRY² steps each: linear in the docstring). */
const SHORT_ENTRY = 64;

/**
 * The name part of a typed entry `name (type)`: exactly what TYPED_ARG captures in its first
 * group (untrimmed), or null when it does not match. The pattern backtracks quadratically (`x` +
 * 100 000 spaces, or 40 000 repeats of `a (`, took ~10 s), so it only reads short entries; longer
 * ones are scanned in linear time.
 */
export function typedArgName(s: string): string | null {
  if (s.length > SHORT_ENTRY) return scanTypedArgName(s);
  const m = TYPED_ARG.exec(s);
  return m ? m[1] : null;
}

/**
 * What TYPED_ARG captures, in one pass from each end.
 *
 * How the pattern matches (leftmost, greedy `^\s*` first, then the shortest `.+?`):
 * - `(.+?)` starts at p0, the first non-space, and ends at the first '(' q > p0 such that
 *   (a) the text from q+1 matches `\s*.*\S\s*\)`: on the line of the first non-space f after q
 *   there is a non-space t (from f on) whose next non-space (across lines) is ')'; and
 *   (b) the group, which ends where the spaces before q begin (but holds at least one character),
 *   contains no line terminator (`.` does not match one).
 * - Failing that, `^\s*` gives back spaces: the group can then only be spaces just before a '('
 *   at p0 that satisfies (a), which needs one space before p0 that is not a line terminator.
 */
export function scanTypedArgName(s: string): string | null {
  if (!s.includes('(')) return null;
  const n = s.length;
  const space = new Uint8Array(n);
  for (let i = 0; i < n; i += 1) space[i] = isSpaceCode(s.charCodeAt(i)) ? 1 : 0;
  const isSpace = (i: number): boolean => space[i] === 1;
  // nextNonSpace[i]: first index >= i holding a non-space (n if none).
  const nextNonSpace = new Int32Array(n + 1);
  nextNonSpace[n] = n;
  for (let i = n - 1; i >= 0; i -= 1) nextNonSpace[i] = isSpace(i) ? nextNonSpace[i + 1] : i;
  // nextGood[i]: first index t >= i with a non-space at t whose next non-space is ')' (n if none).
  const nextGood = new Int32Array(n + 1);
  nextGood[n] = n;
  for (let t = n - 1; t >= 0; t -= 1) {
    const after = nextNonSpace[t + 1];
    nextGood[t] = !isSpace(t) && after < n && s[after] === ')' ? t : nextGood[t + 1];
  }
  // lineEnd[i]: first index >= i holding a line terminator (n if none).
  const lineEnd = new Int32Array(n + 1);
  lineEnd[n] = n;
  for (let i = n - 1; i >= 0; i -= 1) lineEnd[i] = isLineTerminator(s[i]) ? i : lineEnd[i + 1];
  const closes = (q: number): boolean => {
    const f = nextNonSpace[q + 1];
    return f < n && nextGood[f] < lineEnd[f];
  };

  const p0 = nextNonSpace[0];
  if (p0 === n) return null;
  const firstBreak = lineEnd[p0];
  let spacesFrom = p0 + 1; // where the run of spaces before the current index begins
  for (let q = p0 + 1; q < n; q += 1) {
    if (!isSpace(q - 1)) spacesFrom = q;
    const groupEnd = Math.max(p0 + 1, spacesFrom);
    if (groupEnd > firstBreak) break; // the group would hold a line terminator, now and later
    if (s[q] === '(' && closes(q)) return s.slice(p0, groupEnd);
  }
  if (s[p0] === '(' && closes(p0)) {
    for (let i = p0 - 1; i >= 0; i -= 1) if (!isLineTerminator(s[i])) return s.slice(i, i + 1);
  }
  return null;
}

/** The tool description Letta derives from a docstring: summary, blank line, long description. */
export function describe(doc: ParsedDocstring): string {
  const { shortDescription: short, longDescription: long } = doc;
  if (short && long) return `${short}\n\n${long}`;
  return short ?? long ?? 'No description available';
}
