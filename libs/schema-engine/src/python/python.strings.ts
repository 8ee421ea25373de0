/** Static evaluation of Python string literals (docstrings, Literal["..."], Field(description="...")). */

const PREFIX = /^([rRuUbBfFtT]*)('''|"""|'|")/;

const SIMPLE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

/**
 * The value of one Python string literal given its source text, or null when it is not a
 * constant `str` (f-strings, t-strings and bytes are not). `\N{NAME}` escapes are kept verbatim:
 * resolving Unicode names would need the whole name table.
 */
export function decodeStringLiteral(text: string): string | null {
  const m = PREFIX.exec(text);
  if (!m) return null;
  const prefix = m[1].toLowerCase();
  if (prefix.includes('f') || prefix.includes('t') || prefix.includes('b')) return null;
  const quote = m[2];
  const start = m[0].length;
  if (text.length < start + quote.length || !text.endsWith(quote)) return null;
  const body = text.slice(start, text.length - quote.length).replace(/\r\n?/g, '\n');
  return prefix.includes('r') ? body : unescape(body);
}

function unescape(body: string): string {
  if (!body.includes('\\')) return body;
  let out = '';
  let i = 0;
  while (i < body.length) {
    const ch = body[i];
    if (ch !== '\\' || i + 1 >= body.length) {
      out += ch;
      i += 1;
      continue;
    }
    const next = body[i + 1];
    if (next === '\n') {
      i += 2; // line continuation
      continue;
    }
    if (next in SIMPLE_ESCAPES) {
      out += SIMPLE_ESCAPES[next];
      i += 2;
      continue;
    }
    const hexLen = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (hexLen > 0) {
      const hex = body.slice(i + 2, i + 2 + hexLen);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === hexLen ? parseInt(hex, 16) : NaN;
      if (!Number.isNaN(code) && code <= 0x10ffff) {
        out += String.fromCodePoint(code);
        i += 2 + hexLen;
        continue;
      }
    }
    const octal = /^[0-7]{1,3}/.exec(body.slice(i + 1, i + 4));
    if (octal) {
      out += String.fromCodePoint(parseInt(octal[0], 8));
      i += 1 + octal[0].length;
      continue;
    }
    out += ch + next; // unknown escape (and \N{...}): Python keeps it verbatim
    i += 2;
  }
  return out;
}
