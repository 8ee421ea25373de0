/**
 * Admission of calls to the sandboxes: at most `limit` run at once, and at most `perOrg` of one
 * org. Waiting calls are admitted org by org in turn (round robin; first come, first served within
 * an org), so an org that floods the runner delays another org's call by at most the wait for one
 * place to free up, however many of its own calls are queued.
 */
export class FairQueue {
  private active = 0;
  private readonly activeByOrg = new Map<string, number>();
  /** Waiting calls per org; the Map's order is the round-robin order (an org moves to the end once served). */
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(
    private readonly limit: number,
    private readonly perOrg: number = limit,
  ) {}

  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  /** Waits for a place for `org`; resolves with its release (idempotent). */
  async acquire(org: string): Promise<() => void> {
    if (this.waiting.size === 0 && this.canAdmit(org)) this.admit(org);
    else {
      await new Promise<void>((resolve) => {
        const q = this.waiting.get(org);
        if (q) q.push(resolve);
        else this.waiting.set(org, [resolve]);
        this.dispatch();
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      const n = (this.activeByOrg.get(org) ?? 1) - 1;
      if (n > 0) this.activeByOrg.set(org, n);
      else this.activeByOrg.delete(org);
      this.dispatch();
    };
  }

  private canAdmit(org: string): boolean {
    return this.active < this.limit && (this.activeByOrg.get(org) ?? 0) < this.perOrg;
  }

  private admit(org: string): void {
    this.active++;
    this.activeByOrg.set(org, (this.activeByOrg.get(org) ?? 0) + 1);
  }

  /** Fills free places from the waiting orgs in turn. */
  private dispatch(): void {
    let progress = true;
    while (progress && this.active < this.limit) {
      progress = false;
      for (const [org, q] of this.waiting) {
        if (!this.canAdmit(org)) continue;
        const next = q.shift()!;
        this.waiting.delete(org);
        if (q.length) this.waiting.set(org, q); // to the back of the turn
        this.admit(org);
        next();
        progress = true;
        break;
      }
    }
  }
}
