/**
 * Fair admission to a shared resource (runner sandboxes, schema workers): at most `limit` hold a
 * place at once, and at most `perOrg` of one org. When a place frees up it goes to the waiting org
 * served longest ago (first come, first served within an org), so an org that floods delays
 * another org's request by at most the wait for one place to free up, however many of its own
 * requests are queued. A waiter given up (its signal aborted) leaves the queue.
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

  /** Waits for a place for `org`; resolves with its release (idempotent). Rejects with the signal's reason if it aborts first. */
  async acquire(org: string, signal?: AbortSignal): Promise<() => void> {
    if (this.waiting.size === 0 && this.canAdmit(org)) this.admit(org);
    else {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const q = this.waiting.get(org);
          const at = q?.indexOf(admitted) ?? -1;
          if (at < 0) return; // already admitted: the caller gets the place and releases it
          q!.splice(at, 1);
          if (q!.length === 0) {
            this.waiting.delete(org);
            if (!this.activeByOrg.has(org)) this.lastTurn.delete(org);
          }
          reject(signal!.reason);
        };
        const admitted = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const q = this.waiting.get(org);
        if (q) q.push(admitted);
        else this.waiting.set(org, [admitted]);
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
        if (
          this.canAdmit(org) &&
          (pick === undefined || (this.lastTurn.get(org) ?? 0) < (this.lastTurn.get(pick) ?? 0))
        )
          pick = org;
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
