import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Headers } from '@toolplane/contracts';

/** Why a request got no reply: the MessagingClient turns it into the typed error of its subject. */
export class RequestFailed extends Error {
  constructor(
    readonly reason: 'timeout' | 'no_responders' | 'closed' | 'publish' | 'aborted',
    message: string,
    /** `aborted`: the signal's reason. */
    readonly abortReason?: unknown,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: (m: Msg) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
  onProgress?: (m: Msg) => void;
}

export interface MuxRequestOptions {
  timeoutMs: number;
  headers?: MsgHdrs;
  signal?: AbortSignal;
  /** Told when `signal` aborts while the request is in flight (after it is settled): e.g. to tell the server. */
  onCancel?: () => void;
  /** Messages to the reply subject marked as progress (Headers.PROGRESS): handed here, the request keeps waiting. */
  onProgress?: (m: Msg) => void;
}

/**
 * Request/reply over one wildcard inbox subscription per connection: each request gets a token in
 * its reply subject, and its reply is routed back by that token. A timeout, the caller's abort or
 * the connection closing settles a request and forgets it (a late reply is dropped). This is what
 * nats.js's own request mux does, without what it allocates per request on the hot path (with
 * noAsyncTraces, as services connect: a "cancelled" RequestError even for a request that got its
 * reply, a timeout promise and a deferred, plus our abort wrapper's promises): here a request is
 * one promise, one timer and one map entry.
 *
 * A request may also take progress messages before its reply (`onProgress`: messages to its reply
 * subject that carry Headers.PROGRESS; its timer is not reset by them) and be told when its signal
 * cancels it (`onCancel`). Only such requests pay for that (a field, a header read per message).
 */
export class RequestMux {
  private readonly pending = new Map<string, Pending>();
  private base = '';
  private sub?: Subscription;
  private next = 0;

  constructor(private readonly nc: NatsConnection) {}

  /** Requests in flight (tests, diagnostics). */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Publishes `data` to `subject` with a reply subject of this mux; resolves with the reply, or
   * rejects with RequestFailed: timeout, no responders, connection closed, publish refused, or
   * `aborted` once `signal` aborts (its reason in `abortReason`).
   */
  request(subject: string, data: Uint8Array, opts: MuxRequestOptions): Promise<Msg> {
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(aborted(signal));
    try {
      this.subscribe();
    } catch (e) {
      return Promise.reject(new RequestFailed(this.nc.isClosed() ? 'closed' : 'publish', (e as Error).message));
    }
    const token = (this.next++).toString(36);
    return new Promise<Msg>((resolve, reject) => {
      const p: Pending = {
        resolve,
        reject,
        timer: setTimeout(
          () =>
            this.settle(token, new RequestFailed('timeout', `no reply from ${subject} within ${opts.timeoutMs} ms`)),
          opts.timeoutMs,
        ),
      };
      if (signal) {
        p.signal = signal;
        const { onCancel } = opts;
        p.onAbort = onCancel
          ? () => {
              this.settle(token, aborted(signal));
              onCancel();
            }
          : () => this.settle(token, aborted(signal));
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      if (opts.onProgress) p.onProgress = opts.onProgress;
      this.pending.set(token, p);
      try {
        this.nc.publish(subject, data, {
          reply: this.base + token,
          ...(opts.headers ? { headers: opts.headers } : {}),
        });
      } catch (e) {
        this.settle(token, new RequestFailed('publish', (e as Error).message));
      }
    });
  }

  /** The one subscription, made on first use (and again if the connection lost it). */
  private subscribe(): void {
    if (this.sub && !this.sub.isClosed()) return;
    this.base = `${createInbox((this.nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix)}.`;
    const sub = this.nc.subscribe(`${this.base}*`, {
      callback: (err, m) => {
        if (err) return;
        const token = m.subject.slice(this.base.length);
        // The server's "no responders" status: an empty message with a 503 header.
        if (m.data.length === 0 && m.headers?.code === 503)
          return this.settle(token, new RequestFailed('no_responders', 'no responders'));
        const p = this.pending.get(token);
        if (!p) return; // timed out, aborted or closed meanwhile: dropped
        if (p.onProgress && m.headers?.has(Headers.PROGRESS)) return p.onProgress(m);
        this.settle(token, undefined, m, p);
      },
    });
    this.sub = sub;
    void sub.closed.then(() => {
      if (this.sub !== sub) return;
      for (const token of [...this.pending.keys()])
        this.settle(token, new RequestFailed('closed', 'the connection closed'));
    });
  }

  private settle(token: string, error: unknown, reply?: Msg, p = this.pending.get(token)): void {
    if (!p) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort);
    if (reply) p.resolve(reply);
    else p.reject(error);
  }
}

function aborted(signal: AbortSignal): RequestFailed {
  return new RequestFailed('aborted', 'the caller stopped waiting', signal.reason);
}
