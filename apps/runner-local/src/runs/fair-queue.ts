/**
 * Admission of calls to the sandboxes: at most `limit` run at once, and at most `perOrg` of one
 * org. When a place frees up it goes to the waiting org served longest ago (first come, first
 * served within an org), so an org that floods the runner delays another org's call by at most
 * the wait for one place to free up, however many of its own calls are queued.
 */
export class FairQueue {
  private active = 0;
  private readonly activeByOrg = new Map<string, number>();
  /** Waiting calls per org. */
  private readonly waiting = new Map<string, Array<() => void>>();
  /** When each org with calls running or waiting was last admitted (a counter, not a time). */
  private readonly lastTurn = new Map<string, number>();
  private turns = 0;

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
      else {
        this.activeByOrg.delete(org);
        if (!this.waiting.has(org)) this.lastTurn.delete(org); // an org that uses nothing keeps no state
      }
      this.dispatch();
    };
  }

  private canAdmit(org: string): boolean {
    return this.active < this.limit && (this.activeByOrg.get(org) ?? 0) < this.perOrg;
  }

  private admit(org: string): void {
    this.active++;
    this.activeByOrg.set(org, (this.activeByOrg.get(org) ?? 0) + 1);
    this.lastTurn.set(org, ++this.turns);
  }

  /** Fills free places, each from the waiting org (that may take one) served longest ago. */
  private dispatch(): void {
    while (this.active < this.limit) {
      let pick: string | undefined;
      for (const org of this.waiting.keys()) {
        if (this.canAdmit(org) && (pick === undefined || (this.lastTurn.get(org) ?? 0) < (this.lastTurn.get(pick) ?? 0))) pick = org;
      }
      if (pick === undefined) return;
      const q = this.waiting.get(pick)!;
      const next = q.shift()!;
      if (q.length === 0) this.waiting.delete(pick);
      this.admit(pick);
      next();
    }
  }
}
