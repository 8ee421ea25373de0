import {
  ErrorCode,
  ToolplaneError,
  type EventDescriptor,
  type EventOf,
  type ReplyOf,
  type RequestDescriptor,
  type RequestIn,
  type RequestOf,
} from '@toolplane/contracts';
import type { MessagingClient, RequestOptions } from '@toolplane/messaging';

type Handler<D extends RequestDescriptor> = (
  req: RequestOf<D>,
  opts: RequestOptions,
) => ReplyOf<D> | Promise<ReplyOf<D>>;

interface Subscriber {
  events: readonly EventDescriptor[];
  onEvent: (event: EventDescriptor, payload: unknown) => void;
  queue?: string;
}

/**
 * A typed stand-in for MessagingClient, the edge every service talks through: requests go to
 * handlers the test registers per contract descriptor, events to the service's own subscribers.
 * Both sides are validated by the contracts as on the bus (a request or reply that does not match
 * fails the test); nothing is sealed or sent. Use `asClient()` where a MessagingClient is injected.
 */
export class FakeMessaging {
  /** Every request made, in order. */
  readonly requests: Array<{ subject: string; payload: unknown }> = [];
  /** Every event broadcast or published by the service under test. */
  readonly published: Array<{ subject: string; payload: unknown }> = [];
  /** The connection's server info as a service reads it (max_payload bounds what it sends); tests may shrink it. */
  readonly nc = { info: { max_payload: 1024 * 1024 } };
  private readonly handlers = new Map<string, Handler<RequestDescriptor>>();
  private readonly subscribers = new Set<Subscriber>();

  /** Serves `d` with `fn` (replacing an earlier handler): the service's requests to it get its answers. */
  handle<D extends RequestDescriptor>(d: D, fn: Handler<D>): this {
    this.handlers.set(d.subject, fn as unknown as Handler<RequestDescriptor>);
    return this;
  }

  /** Delivers an event to every subscriber of it, as the bus would (once per queue group). */
  emit<E extends EventDescriptor>(e: E, payload: EventOf<E>): void {
    const parsed = e.payload.parse(payload);
    const groups = new Set<string>();
    for (const s of this.subscribers) {
      if (!s.events.some((x) => x.subject === e.subject)) continue;
      if (s.queue) {
        if (groups.has(s.queue)) continue;
        groups.add(s.queue);
      }
      s.onEvent(e, parsed);
    }
  }

  /** The requests made to one subject. */
  requestsTo(d: RequestDescriptor): unknown[] {
    return this.requests.filter((r) => r.subject === d.subject).map((r) => r.payload);
  }

  asClient(): MessagingClient {
    return this as unknown as MessagingClient;
  }

  // --- the MessagingClient surface services use ---

  async request<D extends RequestDescriptor>(d: D, payload: RequestIn<D>, opts: RequestOptions): Promise<ReplyOf<D>> {
    const req = d.request.parse(payload) as RequestOf<D>;
    this.requests.push({ subject: d.subject, payload: req });
    const fn = this.handlers.get(d.subject);
    if (!fn)
      throw new ToolplaneError(
        opts.unavailableCode ?? ErrorCode.SERVICE_UNAVAILABLE,
        `No service is serving ${d.subject}`,
        { subject: d.subject },
      );
    return d.reply.parse(await fn(req, opts)) as ReplyOf<D>;
  }

  onEvents<E extends EventDescriptor>(
    events: readonly E[],
    onEvent: (event: E, payload: EventOf<E>) => void,
    opts: { queue?: string } = {},
  ): { unsubscribe(): void } {
    const sub: Subscriber = {
      events,
      onEvent: onEvent as Subscriber['onEvent'],
      ...(opts.queue ? { queue: opts.queue } : {}),
    };
    this.subscribers.add(sub);
    return { unsubscribe: () => this.subscribers.delete(sub) };
  }

  async publish<E extends EventDescriptor>(e: E, payload: EventOf<E>): Promise<void> {
    this.published.push({ subject: e.subject, payload: e.payload.parse(payload) });
  }

  broadcast<E extends EventDescriptor>(e: E, payload: EventOf<E>): void {
    this.published.push({ subject: e.subject, payload: e.payload.parse(payload) });
  }
}
