import { headers as natsHeaders, type Msg } from '@nats-io/transport-node';
import { Headers, type AppName, type RequestProgress } from '@toolplane/contracts';
import { encodeJson } from './codec';
import type { ServiceSealer } from './service-seal';

/** Longest progress message text sent on (longer text is cut). */
const MAX_MESSAGE_CHARS = 1000;

/**
 * The progress reports of one request being served, sent to its caller on the request's reply
 * subject (marked by Headers.PROGRESS with their sequence number 1, 2, …), made only for a caller
 * that asked for progress. Bounded, so a tool cannot flood the bus: a token bucket of `burst`
 * messages refilled one per `intervalMs` (a few reports close together — a tool's 0/50/100, or
 * reports bunched by a busy hop — all go; a flood is coalesced, the latest wins and goes when a
 * token comes back), and at most `max` messages per request (later reports are dropped; the NATS
 * permission `allow_responses` leaves room for them and the reply). Sealed to the calling service
 * when the request was sealed (nobody else can make progress a service believes), plain JSON to a
 * tenant. Before the reply, a report still waiting goes first (the caller sees the last progress,
 * then the reply); nothing follows the reply; a cancelled request drops it. Cost: one object per
 * request that asks, a timer only while a report waits.
 */
export class ProgressSender {
  private seq = 0;
  private tokens: number;
  private refilledAt = performance.now();
  private waiting?: RequestProgress;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly msg: Msg,
    private readonly opts: {
      intervalMs: number;
      max: number;
      /** Messages that may go at once before the pace applies (default 1). */
      burst?: number;
      /** The sealer and the sealed request, when the caller is a service. */
      sealer?: ServiceSealer;
      sealedFor?: { app: AppName; nonce: string };
    },
  ) {
    this.tokens = opts.burst ?? 1;
  }

  /** Messages sent so far. */
  get sent(): number {
    return this.seq;
  }

  report(p: RequestProgress): void {
    if (this.closed || this.seq >= this.opts.max) return;
    const clean = cleanProgress(p);
    if (!clean) return;
    if (this.timer) {
      this.waiting = clean;
      return;
    }
    this.refill();
    if (this.tokens >= 1) return this.send(clean);
    this.waiting = clean;
    this.timer = setTimeout(() => this.flush(), Math.max(0, (1 - this.tokens) * this.opts.intervalMs));
    this.timer.unref();
  }

  /**
   * No more progress: the reply is about to go (`last`: a report still waiting goes first, in
   * order before the reply), or the request was given up (it is dropped).
   */
  close(last = false): void {
    const p = last && this.seq < this.opts.max ? this.waiting : undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting = undefined;
    if (p && !this.closed) this.send(p);
    this.closed = true;
  }

  private refill(): void {
    const now = performance.now();
    const burst = this.opts.burst ?? 1;
    this.tokens =
      this.opts.intervalMs <= 0 ? burst : Math.min(burst, this.tokens + (now - this.refilledAt) / this.opts.intervalMs);
    this.refilledAt = now;
  }

  private flush(): void {
    this.timer = undefined;
    const p = this.waiting;
    this.waiting = undefined;
    if (!p || this.closed) return;
    this.refill();
    this.send(p);
  }

  private send(p: RequestProgress): void {
    this.tokens -= 1;
    const seq = ++this.seq;
    const body = encodeJson(p);
    const h = natsHeaders();
    h.set(Headers.PROGRESS, String(seq));
    const { sealer, sealedFor } = this.opts;
    try {
      if (sealer && sealedFor) {
        const sealed = sealer.sealProgress(this.msg.subject, sealedFor.app, sealedFor.nonce, seq, body);
        h.set(Headers.SERVICE_SEAL, sealed.header);
        this.msg.respond(sealed.data, { headers: h });
      } else {
        this.msg.respond(body, { headers: h });
      }
    } catch {
      // The connection is closing: progress is best effort, the reply path reports the failure.
      this.close();
    }
  }
}

/** The report's three fields, finite numbers only, the text cut; undefined when `progress` is not a finite number. */
function cleanProgress(p: RequestProgress): RequestProgress | undefined {
  if (typeof p?.progress !== 'number' || !Number.isFinite(p.progress)) return undefined;
  const out: RequestProgress = { progress: p.progress };
  if (typeof p.total === 'number' && Number.isFinite(p.total)) out.total = p.total;
  if (typeof p.message === 'string')
    out.message = p.message.length > MAX_MESSAGE_CHARS ? p.message.slice(0, MAX_MESSAGE_CHARS) : p.message;
  return out;
}
