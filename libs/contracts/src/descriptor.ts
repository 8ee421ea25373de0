import type { z } from 'zod';
import type { AppName, Scope } from './identity';

/**
 * A typed message handle shared by sender and receiver: the subject and the zod schemas of both
 * directions. Apps refer to descriptors, never to subject strings.
 */
export interface RequestDescriptor<Req extends z.ZodType = z.ZodType, Rep extends z.ZodType = z.ZodType> {
  readonly kind: 'request';
  readonly subject: string;
  readonly visibility: 'public' | 'internal';
  readonly summary: string;
  readonly request: Req;
  readonly reply: Rep;
  /** The one app that serves it (its queue group, the only NATS user allowed to subscribe). */
  readonly servedBy: AppName;
  /** Public subjects: the scope an org token needs. */
  readonly scope?: Scope;
  /** Internal subjects: the apps that may call it (checked on every message, and in the NATS permissions). */
  readonly callers?: readonly AppName[];
  /** Request fields passed through untouched and never stored as text (exempt from findWireIssue's text rule), by path: `args`, `calls.*.args`. */
  readonly opaque?: readonly string[];
}

export interface EventDescriptor<P extends z.ZodType = z.ZodType> {
  readonly kind: 'event';
  readonly subject: string;
  readonly summary: string;
  readonly payload: P;
  /**
   * The apps that may publish it (like `servedBy` on a request): every event is signed by its
   * publisher, and a consumer drops one that is not signed by an app named here. MessagingClient
   * refuses to publish an event for an app not named here.
   */
  readonly publishedBy: readonly AppName[];
  /**
   * An internal broadcast that is an order, not a hint: sealed by one of `from` to every replica of
   * `to` (which opens it, checks the sender, and ignores anything else).
   */
  readonly sealed?: { readonly from: readonly AppName[]; readonly to: AppName };
}

/**
 * A JetStream work queue (WorkQueue retention, explicit ack): each message is work that exactly one
 * replica of `servedBy` takes and acknowledges when done; redelivered if it is not.
 */
export interface WorkQueueDescriptor<P extends z.ZodType = z.ZodType> {
  readonly kind: 'work-queue';
  readonly subject: string;
  /** The stream's base name (prefixed per deployment like every stream). */
  readonly stream: string;
  readonly summary: string;
  readonly payload: P;
  /** The one app that consumes it (a durable pull consumer named after it). */
  readonly servedBy: AppName;
}

export type RequestIn<D extends RequestDescriptor> = z.input<D['request']>;
export type RequestOf<D extends RequestDescriptor> = z.output<D['request']>;
export type ReplyOf<D extends RequestDescriptor> = z.output<D['reply']>;
export type ReplyIn<D extends RequestDescriptor> = z.input<D['reply']>;
export type EventOf<D extends EventDescriptor> = z.output<D['payload']>;

const REQUEST_SUBJECT = /^toolplane\.(internal\.)?v[0-9]+\.[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z0-9-]+$/;
/** `toolplane.internal.…` events are core-NATS broadcasts between services (no stream, never public). */
const EVENT_SUBJECT = /^toolplane\.(internal\.)?v[0-9]+\.events\.[a-z0-9-]+\.[a-z]+$/;

export function defineRequest<Req extends z.ZodType, Rep extends z.ZodType>(
  d: Omit<RequestDescriptor<Req, Rep>, 'kind'>,
): RequestDescriptor<Req, Rep> {
  if (!REQUEST_SUBJECT.test(d.subject)) throw new Error(`Bad request subject: ${d.subject}`);
  if (d.subject.startsWith('toolplane.internal.') !== (d.visibility === 'internal')) {
    throw new Error(`Subject ${d.subject} does not match its visibility ${d.visibility}`);
  }
  if (d.visibility === 'public' && (!d.scope || d.callers))
    throw new Error(`Public subject ${d.subject} names a scope and no callers`);
  if (d.visibility === 'internal' && (!d.callers?.length || d.scope))
    throw new Error(`Internal subject ${d.subject} names its callers and no scope`);
  return { kind: 'request', ...d };
}

const WORK_SUBJECT = /^toolplane\.internal\.v[0-9]+\.work\.[a-z0-9-]+$/;

export function defineWorkQueue<P extends z.ZodType>(d: Omit<WorkQueueDescriptor<P>, 'kind'>): WorkQueueDescriptor<P> {
  if (!WORK_SUBJECT.test(d.subject)) throw new Error(`Bad work queue subject: ${d.subject}`);
  return { kind: 'work-queue', ...d };
}

export function defineEvent<P extends z.ZodType>(d: Omit<EventDescriptor<P>, 'kind'>): EventDescriptor<P> {
  if (!EVENT_SUBJECT.test(d.subject)) throw new Error(`Bad event subject: ${d.subject}`);
  if (d.sealed && !d.subject.startsWith('toolplane.internal.'))
    throw new Error(`Sealed event ${d.subject} must be internal`);
  if (!d.publishedBy?.length) throw new Error(`Event ${d.subject} names the apps that publish it (publishedBy)`);
  if (
    d.sealed &&
    (d.sealed.from.length !== d.publishedBy.length || d.sealed.from.some((a) => !d.publishedBy.includes(a)))
  ) {
    throw new Error(`Sealed event ${d.subject}: sealed.from and publishedBy name the same apps`);
  }
  return { kind: 'event', ...d };
}
