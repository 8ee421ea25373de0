import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ConnectionAuthorized, McpServerSynced } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';

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
export class ConnectionWaits implements OnModuleInit, OnModuleDestroy {
  private readonly waits = new Map<string, Set<(ok: boolean) => void>>();
  private subscription?: { unsubscribe(): void };

  constructor(private readonly messaging?: MessagingClient) {}

  onModuleInit(): void {
    // A user's account (connection.authorized), or the org's own authorization completed (the server synced with it).
    this.subscription = this.messaging?.onEvents([ConnectionAuthorized, McpServerSynced], (e, p) => {
      if (e === ConnectionAuthorized) this.connected(p.org_id, (p as { user_id: string }).user_id, p.server_id);
      else if ((p as { ok: boolean }).ok) this.connected(p.org_id, null, p.server_id);
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

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

  /** An account was connected (userId null: the org's own): every call waiting for it goes on — for the org's, every call waiting on that server. */
  connected(org: string, userId: string | null, serverId: string): void {
    const prefix = `${org}\u0000`;
    const suffix = `\u0000${serverId}`;
    for (const [key, set] of [...this.waits]) {
      const matches =
        userId === null
          ? key.startsWith(prefix) && key.endsWith(suffix)
          : key === `${org}\u0000${userId}\u0000${serverId}`;
      if (matches) for (const fire of [...set]) fire(true);
    }
  }
}
