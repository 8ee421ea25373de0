import { Logger } from '@nestjs/common';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import {
  DEPENDENCY_DOWN_CODES,
  ErrorCode,
  ErrorEnvelope,
  Headers,
  REQUEST_CANCELS,
  RequestProgress,
  ToolplaneError,
  type AppName,
  type EventDescriptor,
  type EventOf,
  type ReplyOf,
  type RequestDescriptor,
  type RequestIn,
  type WorkQueueDescriptor,
} from '@toolplane/contracts';
import type { z } from 'zod';
import { decodeJson, encodeJson, parseContract } from './codec';
import { currentRequestSignal } from './request-context';
import { RequestFailed, RequestMux } from './request-mux';
import { EventDrops, type EventDropReason, type EventSigner, type EventVerifier } from './event-signature';
import type { ServiceSealer } from './service-seal';
import { withPrefix } from './subjects';
import { extractTraceContext, injectTraceContext } from './trace-context';

export interface RequestOptions {
  timeoutMs: number;
  /**
   * Stop waiting when aborted (default: the signal of the request being served, if any), and
   * cancel the request: the serving replica's handler signal aborts with REQUEST_CANCELLED (and so
   * does the work it does, its own requests included).
   */
  signal?: AbortSignal;
  /**
   * Not bound to the request being served (its signal is not the default): work that must outlive
   * its caller's cancel or deadline, e.g. recording the outcome of a call that was cancelled.
   */
  detached?: boolean;
  /**
   * Progress the handler reports (reportProgress), in order, before the reply; unsealed, forged or
   * replayed reports are dropped. A handler forwards a next hop's progress to its own caller with
   * `onProgress: currentProgressReporter()`. It does not extend `timeoutMs`.
   */
  onProgress?: (p: RequestProgress) => void;
  /** The code to throw when nobody serves the subject (default SERVICE_UNAVAILABLE). */
  unavailableCode?: ErrorCode;
  /**
   * When the serving app is down — nobody serves the subject, no reply in time, or it answers
   * SERVICE_UNAVAILABLE / REQUEST_TIMEOUT — throw `code` instead, its message `what: <why>` (e.g.
   * CREDENTIALS_UNAVAILABLE: a caller must not go on without what it asked for).
   */
  down?: { code: ErrorCode; what: string };
}

const tracer = trace.getTracer('@toolplane/messaging');
const eventLog = new Logger('Events');

/** An app's event signing key and the check of the events it receives (libs/messaging event-signature.ts). */
export interface EventSignatures {
  signer: EventSigner;
  verifier: EventVerifier;
}

/**
 * Typed request/reply and event publishing by contract descriptor, as one service. Validates what
 * it sends and what it receives, seals every request to the service that serves the subject (and
 * opens only a reply sealed by it), signs every event it publishes and drops every event it
 * receives that is not signed by its owner, carries W3C trace context in headers, and always
 * bounds a request in time.
 */
export class MessagingClient {
  private js?: JetStreamClient;
  private readonly mux: RequestMux;

  constructor(
    readonly nc: NatsConnection,
    readonly prefix: string,
    readonly sealer: ServiceSealer,
    readonly events: EventSignatures,
    /** Replicas of the streams and KV buckets this app creates (NATS_STREAM_REPLICAS). */
    readonly streamReplicas = 1,
  ) {
    this.mux = new RequestMux(nc);
  }

  async request<D extends RequestDescriptor>(d: D, payload: RequestIn<D>, opts: RequestOptions): Promise<ReplyOf<D>> {
    // Validated once per hop, where it is received: the serving app parses every request against
    // the same descriptor (sealed or not) and answers CONTRACT_VIOLATION, so the sender does not parse it first.
    const data = encodeJson(payload);
    const max = this.nc.info?.max_payload ?? 1024 * 1024;
    if (data.byteLength > max) {
      throw new ToolplaneError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        `Request to ${d.subject} is ${data.byteLength} bytes; the limit is ${max}`,
        {
          bytes: data.byteLength,
          limit: max,
        },
      );
    }
    return tracer.startActiveSpan(
      `send ${d.subject}`,
      { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': d.subject } },
      async (span) => {
        try {
          const h = injectTraceContext();
          h.set(Headers.DEADLINE, String(Date.now() + opts.timeoutMs));
          const subject = withPrefix(this.prefix, d.subject);
          const sealed = this.sealer.sealRequest(subject, d.servedBy, data);
          h.set(Headers.SERVICE_SEAL, sealed.header);
          const signal = opts.signal ?? (opts.detached ? undefined : currentRequestSignal());
          // A cancellable request is named by its seal's nonce (random, and only this service can seal a cancel naming it).
          if (signal) h.set(Headers.CANCEL_TOKEN, sealed.nonce);
          if (opts.onProgress) h.set(Headers.PROGRESS, '1');
          let msg;
          try {
            msg = await this.mux.request(subject, sealed.data, {
              timeoutMs: opts.timeoutMs,
              headers: h,
              signal,
              ...(signal ? { onCancel: () => this.cancel(d.servedBy, sealed.nonce) } : {}),
              ...(opts.onProgress
                ? { onProgress: this.progressOpener(subject, d.servedBy, sealed.nonce, opts.onProgress) }
                : {}),
            });
          } catch (e) {
            throw this.transportError(e, d.subject, opts);
          }
          const value = decodeJson(
            this.openReply(d, sealed.nonce, msg.headers?.get(Headers.SERVICE_SEAL) ?? '', msg.data),
          );
          // Only a body with an `error` can be the envelope (a failed parse builds a ZodError: not on every reply).
          const env =
            typeof value === 'object' && value !== null && 'error' in value
              ? ErrorEnvelope.safeParse(value)
              : undefined;
          if (env?.success) throw ToolplaneError.fromBody(env.data.error);
          return parseContract(d.reply, value, `Reply from ${d.subject}`) as ReplyOf<D>;
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
          if (
            opts.down &&
            e instanceof ToolplaneError &&
            (DEPENDENCY_DOWN_CODES.has(e.code) || e.code === opts.unavailableCode)
          ) {
            throw new ToolplaneError(opts.down.code, `${opts.down.what}: ${e.message}`, e.details, { cause: e });
          }
          throw e;
        } finally {
          span.end();
        }
      },
    );
  }

  /** Tells the serving app that its request `token` is given up (a sealed broadcast only its replicas open). */
  private cancel(servedBy: AppName, token: string): void {
    try {
      this.notify(REQUEST_CANCELS[servedBy], { token });
    } catch (e) {
      // The connection is closing: the serving side stops the work at the request's deadline.
      eventLog.debug(`could not send the cancel of a request to ${servedBy}: ${(e as Error).message}`);
    }
  }

  /**
   * The request's progress messages, opened: sealed by the serving app for this request and its
   * sequence number, in order (a stale, replayed or forged one is dropped), matching RequestProgress.
   */
  private progressOpener(
    subject: string,
    servedBy: AppName,
    nonce: string,
    onProgress: (p: RequestProgress) => void,
  ): (m: Msg) => void {
    let last = 0;
    return (m) => {
      const seq = Number(m.headers?.get(Headers.PROGRESS));
      if (!Number.isSafeInteger(seq) || seq <= last) return;
      let p: RequestProgress;
      try {
        const body = this.sealer.openProgress(
          subject,
          servedBy,
          nonce,
          seq,
          m.headers?.get(Headers.SERVICE_SEAL) ?? '',
          m.data,
        );
        p = RequestProgress.parse(decodeJson(body));
      } catch {
        return;
      }
      last = seq;
      try {
        onProgress(p);
      } catch (e) {
        eventLog.warn(`a progress handler of ${subject} failed: ${(e as Error).message}`);
      }
    };
  }

  /** Publish an event (or a work-queue message) to JetStream (waits for the stream's ack; msgID dedups retries). */
  async publish<E extends EventDescriptor | WorkQueueDescriptor>(
    e: E,
    payload: z.output<E['payload']>,
    msgId: string,
  ): Promise<void> {
    if (e.kind === 'event') this.mayPublish(e);
    const body = parseContract(e.payload, payload, `Event ${e.subject}`);
    this.js ??= jetstream(this.nc);
    await tracer.startActiveSpan(`publish ${e.subject}`, { kind: SpanKind.PRODUCER }, async (span) => {
      try {
        const subject = withPrefix(this.prefix, e.subject);
        const data = encodeJson(body);
        const h = injectTraceContext();
        // An event is signed by its publisher over its msgID (a work-queue message is the executor's own, not an event).
        if (e.kind === 'event') this.events.signer.sign(h, subject, msgId, data);
        await this.js!.publish(subject, data, { msgID: msgId, headers: h, timeout: 5000 });
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw new ToolplaneError(
          ErrorCode.SERVICE_UNAVAILABLE,
          `Could not publish ${e.subject} to JetStream: ${(err as Error).message}`,
          undefined,
          { cause: err },
        );
      } finally {
        span.end();
      }
    });
  }

  /**
   * Core-NATS publish (no JetStream, no ack) of an internal broadcast event: every subscriber
   * replica gets it, nobody stores it. Queued on this connection in order with what it sends next
   * (e.g. the reply to the request that caused it).
   */
  broadcast<E extends EventDescriptor>(e: E, payload: EventOf<E>): void {
    this.mayPublish(e);
    const body = parseContract(e.payload, payload, `Event ${e.subject}`);
    const subject = withPrefix(this.prefix, e.subject);
    const data = encodeJson(body);
    const h = injectTraceContext();
    this.events.signer.sign(h, subject, this.events.signer.newId(), data);
    this.nc.publish(subject, data, { headers: h });
  }

  /** A sealed internal broadcast (EventDescriptor.sealed): only replicas of `sealed.to` can open it. */
  notify<E extends EventDescriptor>(e: E, payload: EventOf<E>): void {
    if (!e.sealed?.from.includes(this.sealer.app)) throw new Error(`${this.sealer.app} may not send ${e.subject}`);
    this.mayPublish(e);
    const body = parseContract(e.payload, payload, `Event ${e.subject}`);
    const subject = withPrefix(this.prefix, e.subject);
    const sealed = this.sealer.sealRequest(subject, e.sealed.to, encodeJson(body));
    const h = injectTraceContext();
    h.set(Headers.SERVICE_SEAL, sealed.header);
    this.nc.publish(subject, sealed.data, { headers: h });
  }

  /** Every replica receives a sealed broadcast; one that does not open, or comes from another sender, is dropped. */
  subscribeSealed<E extends EventDescriptor>(e: E, onEvent: (payload: EventOf<E>) => void): { unsubscribe(): void } {
    const sealed = e.sealed;
    if (sealed?.to !== this.sealer.app) throw new Error(`${e.subject} is not sealed to ${this.sealer.app}`);
    const sub = this.nc.subscribe(withPrefix(this.prefix, e.subject), {
      callback: (err, msg) => {
        if (err) return;
        try {
          const opened = this.sealer.openRequest(msg.subject, msg.headers?.get(Headers.SERVICE_SEAL) ?? '', msg.data);
          if (!sealed.from.includes(opened.from)) return;
          const payload = parseContract(e.payload, decodeJson(opened.body), `Event ${e.subject}`) as EventOf<E>;
          context.with(extractTraceContext(msg.headers), () => onEvent(payload));
        } catch {
          // not sealed by an allowed sender, a replay, or malformed: ignored
        }
      },
    });
    return { unsubscribe: () => sub.unsubscribe() };
  }

  /**
   * Core-NATS subscription to contract events. Each is first checked for its owner's signature
   * (EventVerifier: signed by an app of its descriptor's publishedBy, not stale, not replayed;
   * else dropped and counted in `refusedEvents` before its payload is parsed), then validated by
   * its descriptor as a request is (one that does not match is dropped and logged by subject,
   * never handed on, never quoted): every replica receives them, or with `queue` one replica of the
   * group does (work an event asks for once, not per replica). The replay window is each
   * replica's: within the skew, an event published again may reach another replica of the group,
   * which takes it. So a queue group is for idempotent work.
   */
  onEvents<E extends EventDescriptor>(
    events: readonly E[],
    onEvent: (event: E, payload: EventOf<E>) => void,
    opts: {
      queue?: string /** Also told of a JSON payload that does not match (e.g. to drop what it may concern, in a rolling upgrade). */;
      invalid?: (event: E, raw: unknown) => void;
    } = {},
  ): { unsubscribe(): void } {
    // Ids seen by this subscription (another handler of the same event in this process gets it too).
    const replay = this.events.verifier.replayWindow();
    const subs = events.map((e) =>
      this.nc.subscribe(withPrefix(this.prefix, e.subject), {
        ...(opts.queue ? { queue: opts.queue } : {}),
        callback: (err, msg) => {
          if (err) return;
          const verdict = this.events.verifier.verify(e.publishedBy, msg.subject, msg.headers, msg.data, { replay });
          if (!verdict.ok) return this.refused(e.subject, verdict.reason);
          let payload: EventOf<E>;
          let raw: unknown;
          try {
            raw = decodeJson(msg.data);
            payload = parseContract(e.payload, raw, `Event ${e.subject}`) as EventOf<E>;
          } catch (bad) {
            this.dropped(e.subject, bad);
            if (raw !== undefined) opts.invalid?.(e, raw);
            return;
          }
          context.with(extractTraceContext(msg.headers), () => onEvent(e, payload));
        },
      }),
    );
    return { unsubscribe: () => subs.forEach((s) => s.unsubscribe()) };
  }

  /** An app publishes only the events its contract says it publishes (EventDescriptor.publishedBy). */
  private mayPublish(e: EventDescriptor): void {
    if (!e.publishedBy.includes(this.sealer.app))
      throw new Error(`${this.sealer.app} may not publish ${e.subject} (publishedBy: ${e.publishedBy.join(', ')})`);
  }

  /** Events dropped before any handler because they were not signed by their owner, by subject and reason (for metrics and tests). */
  readonly refusedEvents = new EventDrops();

  private refused(subject: string, reason: EventDropReason): void {
    const n = this.refusedEvents.add(subject, reason);
    // The first of a subject and reason, then every 1,000th: a flood of forgeries cannot flood the log.
    if (n === 1 || n % 1000 === 0) eventLog.warn(`dropped ${n} event(s) on ${subject}: ${reason.replace('_', ' ')}`);
  }

  /** Events dropped because they did not match their contract, by subject (for metrics and tests). */
  readonly droppedEvents = new Map<string, number>();

  private dropped(subject: string, e: unknown): void {
    const n = (this.droppedEvents.get(subject) ?? 0) + 1;
    this.droppedEvents.set(subject, n);
    // The first of a subject, then every 1,000th: a flood of bad events cannot flood the log.
    if (n === 1 || n % 1000 === 0)
      eventLog.warn(
        `dropped ${n} event(s) on ${subject} that do not match the contract: ${e instanceof ToolplaneError ? e.message : 'malformed'}`,
      );
  }

  /**
   * The reply's body: sealed by the serving app for this request. A plain reply is accepted only
   * as an error envelope (a service that could not authenticate the request cannot seal to it).
   */
  private openReply(d: RequestDescriptor, nonce: string, seal: string, data: Uint8Array): Uint8Array {
    if (seal) return this.sealer.openReply(withPrefix(this.prefix, d.subject), d.servedBy, nonce, seal, data);
    const value = decodeJson(data);
    if (ErrorEnvelope.safeParse(value).success) return data;
    throw new ToolplaneError(
      ErrorCode.SERVICE_UNAVAILABLE,
      `The reply from ${d.subject} is not sealed by ${d.servedBy}: refused`,
      { subject: d.subject },
    );
  }

  private transportError(e: unknown, subject: string, opts: RequestOptions): ToolplaneError {
    if (e instanceof ToolplaneError) return e;
    if (e instanceof RequestFailed && e.reason === 'no_responders') {
      const code = opts.unavailableCode ?? ErrorCode.SERVICE_UNAVAILABLE;
      return new ToolplaneError(code, `No service is serving ${subject}`, { subject }, { cause: e });
    }
    if (e instanceof RequestFailed && e.reason === 'timeout') {
      return new ToolplaneError(
        ErrorCode.REQUEST_TIMEOUT,
        `No reply from ${subject} within ${opts.timeoutMs} ms`,
        {
          subject,
          timeout_ms: opts.timeoutMs,
        },
        { cause: e },
      );
    }
    // The caller gave up: its typed reason (its deadline passed, its service is shutting down, its own caller cancelled), else cancelled.
    if (e instanceof RequestFailed && e.reason === 'aborted') {
      return e.abortReason instanceof ToolplaneError
        ? e.abortReason
        : new ToolplaneError(
            ErrorCode.REQUEST_CANCELLED,
            `The request to ${subject} was cancelled`,
            { subject },
            { cause: e },
          );
    }
    return new ToolplaneError(
      ErrorCode.SERVICE_UNAVAILABLE,
      `NATS request to ${subject} failed: ${(e as Error)?.message ?? String(e)}`,
      { subject },
    );
  }
}
