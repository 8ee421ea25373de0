/** A cumulative Prometheus histogram (seconds), rendered as text-format lines. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) if (seconds <= this.bounds[i]!) this.counts[i]!++;
  }

  /** The `_bucket`, `_sum` and `_count` lines of `name`, with `labels` (`a="x",b="y"`) on each. */
  lines(name: string, labels = ''): string[] {
    const l = (extra: string) => `{${[labels, extra].filter(Boolean).join(',')}}`;
    return [
      ...this.bounds.map((b, i) => `${name}_bucket${l(`le="${b}"`)} ${this.counts[i]}`),
      `${name}_bucket${l('le="+Inf"')} ${this.count}`,
      `${name}_sum${labels ? `{${labels}}` : ''} ${this.sum}`,
      `${name}_count${labels ? `{${labels}}` : ''} ${this.count}`,
    ];
  }
}
