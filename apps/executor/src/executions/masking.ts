export const MASK = '***';
/** Shorter values are not masked: they would mask ordinary text ("1", "yes"). */
export const MIN_MASKED_LENGTH = 4;

/**
 * Replaces every occurrence of the given secret values with `***`, like CI systems mask secrets.
 * Longest values first, so a value containing another is masked whole.
 */
export class SecretMasker {
  private readonly values: string[];

  constructor(values: Iterable<string>) {
    this.values = [...new Set([...values].filter((v) => v.length >= MIN_MASKED_LENGTH))].sort((a, b) => b.length - a.length);
  }

  get active(): boolean {
    return this.values.length > 0;
  }

  text(s: string): string {
    let out = s;
    for (const v of this.values) if (out.includes(v)) out = out.split(v).join(MASK);
    return out;
  }

  /** A JSON value with every string (and object key) masked. */
  value(v: unknown): unknown {
    if (!this.active) return v;
    if (typeof v === 'string') return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [this.text(k), this.value(x)]));
    return v;
  }
}
