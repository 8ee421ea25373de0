import { Injectable } from '@nestjs/common';

/** A wait for one account to be connected: settles true when it is, false at the deadline or on abort. */
export interface ConnectionWait {
  wait(timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  cancel(): void;
}

/**
 * Calls waiting for an end user to connect an account (a URL-mode elicitation the client
 * accepted): told by the connection events of the MCP server (connection.authorized), which every
 * gateway replica receives, so the replica holding the call runs it again once the person has
 * authorized. `next` must be taken before the authorization can complete (before the URL is
 * shown), so an event is never missed.
 */
@Injectable()
export class ConnectionWaits {
  private readonly waits = new Map<string, Set<(ok: boolean) => void>>();

  next(org: string, userId: string | null, serverId: string): ConnectionWait {
    const key = `${org}\u0000${userId ?? ''}\u0000${serverId}`;
    let settle!: (ok: boolean) => void;
    let done = false;
    const settled = new Promise<boolean>((resolve) => (settle = resolve));
    const fire = (ok: boolean) => {
      if (done) return;
      done = true;
      this.waits.get(key)?.delete(fire);
      if (!this.waits.get(key)?.size) this.waits.delete(key);
      settle(ok);
    };
    let set = this.waits.get(key);
    if (!set) this.waits.set(key, (set = new Set()));
    set.add(fire);
    return {
      wait: (timeoutMs, signal) => {
        const timer = setTimeout(() => fire(false), timeoutMs);
        timer.unref();
        signal?.addEventListener('abort', () => fire(false), { once: true });
        return settled.finally(() => clearTimeout(timer));
      },
      cancel: () => fire(false),
    };
  }

  /** An account was connected: every call waiting for it goes on. */
  connected(org: string, userId: string | null, serverId: string): void {
    for (const fire of [...(this.waits.get(`${org}\u0000${userId ?? ''}\u0000${serverId}`) ?? [])]) fire(true);
  }
}
