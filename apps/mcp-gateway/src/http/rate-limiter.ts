/**
 * Requests per caller identity, as a token bucket per replica: `ratePerSecond` refill, `burst`
 * capacity. `take` answers 0 when the request may go, else the seconds until it may (Retry-After).
 * Bounded: past `maxKeys` identities the oldest half is dropped (a dropped bucket starts full).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly maxKeys = 100_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  take(key: string): number {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.evict();
      b = { tokens: this.burst, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.ratePerSecond);
      b.at = t;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSecond));
  }

  private evict(): void {
    let n = Math.floor(this.buckets.size / 2);
    for (const k of this.buckets.keys()) {
      if (n-- <= 0) break;
      this.buckets.delete(k);
    }
  }
}
