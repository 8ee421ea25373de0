export const MASK = '***';
/** Shorter values are not masked: they would mask ordinary text ("1", "yes"). */
export const MIN_MASKED_LENGTH = 4;

/**
 * Replaces every occurrence of the given secret values with `***`, like CI systems mask secrets.
 * One left-to-right pass; at each position the longest value that matches is masked whole.
 *
 * Mask before you cut: `maskedPrefix` masks and cuts in one step, so a secret that straddles the
 * cut is masked whole (its first part is never kept). The executor masks results; the runner masks
 * a call's output before it keeps only the first bytes of each stream.
 */
export class SecretMasker {
  private readonly values: string[];
  private readonly pattern?: RegExp;
  /** UTF-8 bytes of the longest value: how far past a cut the text must be kept to mask before cutting. */
  readonly lookaheadBytes: number;

  constructor(values: Iterable<string>) {
    this.values = [...new Set([...values].filter((v) => typeof v === 'string' && v.length >= MIN_MASKED_LENGTH))].sort(
      (a, b) => b.length - a.length,
    );
    if (this.values.length) this.pattern = new RegExp(this.values.map(escapeRegExp).join('|'), 'g');
    this.lookaheadBytes = this.values.reduce((n, v) => Math.max(n, Buffer.byteLength(v, 'utf8')), 0);
  }

  get active(): boolean {
    return this.values.length > 0;
  }

  text(s: string): string {
    return this.pattern && s.length >= MIN_MASKED_LENGTH ? s.replace(this.pattern, MASK) : s;
  }

  /** A JSON value with every string (and object key) masked. */
  value(v: unknown): unknown {
    if (!this.active) return v;
    if (typeof v === 'string') return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [this.text(k), this.value(x)]),
      );
    return v;
  }

  /**
   * The masked text of the first `maxBytes` UTF-8 bytes of `s`. A value that starts before the cut
   * is masked whole even when it ends after it, so `s` must hold `lookaheadBytes` more than the
   * cut when it is itself the start of a longer text (`more`). The result is at most `maxBytes`
   * bytes. `truncated`: something of the whole text is not in the result.
   */
  maskedPrefix(s: string, maxBytes: number, more = false): { text: string; truncated: boolean } {
    const out: string[] = [];
    let outBytes = 0;
    let consumed = 0; // UTF-8 bytes of `s` read so far
    let at = 0;
    const appendPlain = (end: number): boolean => {
      const cut = utf8Prefix(s, at, end, maxBytes - consumed);
      out.push(s.slice(at, cut.end));
      outBytes += cut.bytes;
      consumed += cut.bytes;
      at = cut.end;
      return cut.end === end;
    };
    for (const m of this.pattern ? s.matchAll(this.pattern) : []) {
      if (!appendPlain(m.index) || consumed >= maxBytes || outBytes + MASK.length > maxBytes)
        return { text: out.join(''), truncated: true };
      out.push(MASK);
      outBytes += MASK.length;
      consumed += Buffer.byteLength(m[0], 'utf8');
      at = m.index + m[0].length;
    }
    const complete = appendPlain(s.length);
    return { text: out.join(''), truncated: !complete || more };
  }
}

/** The end index (≤ end) of the longest prefix of s[from, end) within `budget` UTF-8 bytes, never splitting a character. */
function utf8Prefix(s: string, from: number, end: number, budget: number): { end: number; bytes: number } {
  let bytes = 0;
  let i = from;
  while (i < end) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < end;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > budget) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return { end: i, bytes };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
