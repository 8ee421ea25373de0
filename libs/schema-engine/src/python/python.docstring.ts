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

const TITLE = new RegExp(`^(${Object.keys(SECTION_KINDS).join('|')}):[ \\t\\r\\f\\v]*$`, 'gm');
const TYPED_ARG = /^\s*(.+?)\s*\(\s*(.*\S)\s*\)/;

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
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  while (lines.length > 0 && lines[0] === '') lines.shift();
  return lines.join('\n');
}

function stripNewlines(s: string): string {
  return s.replace(/^\n+/, '').replace(/\n+$/, '');
}

export function parseDocstring(raw: string): ParsedDocstring {
  const result: ParsedDocstring = { shortDescription: null, longDescription: null, params: new Map(), attributes: new Map() };
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
    const typed = TYPED_ARG.exec(before);
    const name = (typed ? typed[1] : before).trim();
    out.push([name, desc]);
  }
  return out;
}

/** The tool description Letta derives from a docstring: summary, blank line, long description. */
export function describe(doc: ParsedDocstring): string {
  const { shortDescription: short, longDescription: long } = doc;
  if (short && long) return `${short}\n\n${long}`;
  return short ?? long ?? 'No description available';
}
