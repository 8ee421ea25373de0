import { Catch, Logger, createParamDecorator, type ExceptionFilter, type ExecutionContext } from '@nestjs/common';
import {
  BaseRpcContext,
  MessagePattern,
  Server,
  type CustomTransportStrategy,
  type MessageHandler,
} from '@nestjs/microservices';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  ErrorCode,
  Headers,
  MAX_PROGRESS_MESSAGES,
  PROGRESS_BURST,
  PROGRESS_INTERVAL_MS,
  REQUEST_CANCELS,
  ToolplaneError,
  requestDescriptorFor,
  type Principal,
  type RequestDescriptor,
} from '@toolplane/contracts';
import { lastValueFrom, throwError, type Observable } from 'rxjs';
import { checkWireValue, decodeJson, encodeJson, parseContract } from './codec';
import { EdgeAuth, sealedForOf, type Admitted } from './edge-auth';
import { isDependencyDown, toErrorBody } from './error-body';
import { ProgressSender } from './progress';
import { requestContext } from './request-context';
import { withPrefix } from './subjects';
import { extractTraceContext } from './trace-context';

/** Marks a controller method as the handler of a request descriptor. */
export const Handles = (d: RequestDescriptor): MethodDecorator => MessagePattern(d.subject);

/** The verified sender of the request being handled (a handler parameter): an org, an operator or a service. */
export const Caller = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): Principal =>
    ctx.switchToRpc().getContext<BaseRpcContext<[string, Principal]>>().getArgs()[1],
);

/** Bytes a reply may take: the server's max_payload less room for headers. */
const HEADER_ROOM = 4096;

/**
 * Lets the original exception reach the transport, which makes the one error envelope
 * (Nest would otherwise turn any non-RpcException into "Internal server error").
 */
@Catch()
export class PassThroughExceptionFilter implements ExceptionFilter {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

export interface NatsJsonServerOptions {
  nc: NatsConnection;
  prefix: string;
  /** Queue group: replicas of one app share the load. */
  queue: string;
  maxRequestBytes: number;
  /** How long close() waits for in-flight requests. */
  drainTimeoutMs: number;
  /** Who may send what: service seals and org tokens, checked before any handler runs. */
  auth: EdgeAuth;
  /** Progress bounds per request (default PROGRESS_INTERVAL_MS, MAX_PROGRESS_MESSAGES). */
  progress?: { intervalMs?: number; max?: number; burst?: number };
}

const tracer = trace.getTracer('@toolplane/messaging');

/** One request being served. */
interface InFlight {
  d: RequestDescriptor;
  msg: Msg;
  answered: boolean;
  sealedFor?: Admitted['sealedFor'];
  traceId?: string;
  /** A request its caller may cancel: aborted by the caller's sealed cancel (REQUEST_CANCELLED). */
  cancel?: AbortController;
  /** Its key in `cancellable`: `<calling app> <token>`. */
  cancelKey?: string;
  /** Its progress reports, when the caller asked for them. */
  progress?: ProgressSender;
}

/**
 * A Nest transport strategy that serves contract descriptors as plain JSON request/reply on core
 * NATS: no framework framing on the wire, validation at the edge, one error envelope, and a
 * CONSUMER span continuing the caller's trace.
 */
export class NatsJsonServer extends Server implements CustomTransportStrategy {
  private readonly subs: Subscription[] = [];
  private readonly inFlight = new Map<Promise<void>, InFlight>();
  /** Requests in flight that their caller may cancel, by `<calling app> <token>`. */
  private readonly cancellable = new Map<string, InFlight>();
  private cancelSub?: Subscription;
  /** Aborted when the service gives up the requests it still holds (shutdown past its grace). */
  private readonly abandon = new AbortController();
  private readonly log = new Logger('NatsJsonServer');

  constructor(private readonly opts: NatsJsonServerOptions) {
    super();
  }

  listen(callback: () => void): void {
    for (const [pattern, handler] of this.messageHandlers) {
      const d = requestDescriptorFor(pattern);
      if (!d) throw new Error(`No contract descriptor for handler pattern ${pattern}`);
      if (d.servedBy !== this.opts.auth.sealer.app)
        throw new Error(`${d.subject} is served by ${d.servedBy}, not ${this.opts.auth.sealer.app}`);
      if (d.visibility === 'public') this.opts.auth.tokens.start();
      const sub = this.opts.nc.subscribe(withPrefix(this.opts.prefix, d.subject), {
        queue: this.opts.queue,
        callback: (err, msg) => {
          if (err) return this.log.error(`Subscription to ${d.subject} failed: ${err.message}`);
          const call: InFlight = { d, msg, answered: false };
          // Registered at once: a cancel that arrives while the request is being admitted still finds it.
          const token = msg.headers?.get(Headers.CANCEL_TOKEN);
          if (token) this.register(call, token);
          const p = this.onMessage(call, handler).finally(() => {
            this.inFlight.delete(p);
            if (call.cancelKey) this.cancellable.delete(call.cancelKey);
          });
          this.inFlight.set(p, call);
        },
      });
      this.subs.push(sub);
    }
    if (this.messageHandlers.size) {
      // Every replica hears every cancel for its app; only the one holding the token acts on it.
      const cancels = REQUEST_CANCELS[this.opts.auth.sealer.app];
      this.cancelSub = this.opts.nc.subscribe(withPrefix(this.opts.prefix, cancels.subject), {
        callback: (err, msg) => {
          if (!err) this.onCancel(msg);
        },
      });
    }
    callback();
  }

  /**
   * Makes a service's request cancellable, under the app its seal names (a request whose seal does
   * not open never reaches its handler, so a cancel is only ever believed from the real caller).
   * Tenants' requests are not cancellable over the bus (they cannot seal a cancel).
   */
  private register(call: InFlight, token: string): void {
    const seal = call.msg.headers?.get(Headers.SERVICE_SEAL);
    if (!seal || token.length > 64) return;
    const key = `${seal.split(' ')[1]} ${token}`;
    if (this.cancellable.has(key)) return;
    call.cancel = new AbortController();
    call.cancelKey = key;
    this.cancellable.set(key, call);
  }

  /** A cancel: opened only if sealed by a service, and acted on only for a request that same service sent with that token. */
  private onCancel(msg: Msg): void {
    const cancels = REQUEST_CANCELS[this.opts.auth.sealer.app];
    let key: string;
    try {
      const opened = this.opts.auth.sealer.openRequest(
        msg.subject,
        msg.headers?.get(Headers.SERVICE_SEAL) ?? '',
        msg.data,
      );
      const { token } = parseContract(cancels.payload, decodeJson(opened.body), `Event ${cancels.subject}`);
      key = `${opened.from} ${token}`;
    } catch {
      return; // not sealed by a service, a replay, or malformed: ignored
    }
    const call = this.cancellable.get(key);
    if (!call?.cancel || call.answered) return;
    // The caller stopped waiting: no reply, no more progress, and the work for it stops.
    call.answered = true;
    call.progress?.close();
    this.log.debug(`${call.d.subject}: cancelled by its caller`);
    call.cancel.abort(
      new ToolplaneError(
        ErrorCode.REQUEST_CANCELLED,
        `The caller cancelled its ${call.d.subject} request: the work for it was stopped`,
      ),
    );
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Stop taking requests (leave the queue group), wait (bounded) for those in flight, then answer
   * every one still running with a typed, retryable SERVICE_RESTARTING and abort its work (its
   * outgoing requests, e.g. a runner call, are cancelled through the request context).
   */
  async close(): Promise<void> {
    await Promise.all(this.subs.splice(0).map((s) => s.drain().catch(() => undefined)));
    const drained = Promise.all([...this.inFlight.keys()]);
    await Promise.race([drained, new Promise((r) => setTimeout(r, this.opts.drainTimeoutMs).unref())]);
    this.cancelSub?.unsubscribe();
    const abandoned = [...this.inFlight.values()].filter((c) => !c.answered);
    if (abandoned.length)
      this.log.warn(
        `shutting down: ${abandoned.length} request(s) still running after ${this.opts.drainTimeoutMs} ms are answered SERVICE_RESTARTING`,
      );
    const err = new ToolplaneError(
      ErrorCode.SERVICE_RESTARTING,
      `The ${this.opts.queue} service is restarting and gave this request up: retry it`,
    );
    for (const call of abandoned) this.respond(call, encodeJson({ error: toErrorBody(err, call.traceId ?? '') }));
    // Every request still running is given up now: the work done for them stops (one signal for all).
    this.abandon.abort(err);
    this.opts.auth.tokens.stop();
  }

  on(): void {
    // No transport events to expose.
  }

  unwrap<T>(): T {
    return this.opts.nc as T;
  }

  private async onMessage(call: InFlight, handler: MessageHandler): Promise<void> {
    const { d, msg } = call;
    const parent = extractTraceContext(msg.headers);
    await context.with(parent, () =>
      tracer.startActiveSpan(
        `process ${d.subject}`,
        {
          kind: SpanKind.CONSUMER,
          attributes: { 'messaging.system': 'nats', 'messaging.destination.name': d.subject },
        },
        async (span) => {
          call.traceId = span.spanContext().traceId;
          try {
            if (msg.data.byteLength > this.opts.maxRequestBytes) {
              throw new ToolplaneError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                `Request is ${msg.data.byteLength} bytes; the limit is ${this.opts.maxRequestBytes}`,
              );
            }
            const admitted = await this.opts.auth.admit(d, msg);
            call.sealedFor = admitted.sealedFor;
            span.setAttribute(
              'toolplane.caller',
              admitted.principal.kind === 'service' ? admitted.principal.app : admitted.principal.kind,
            );
            const json = decodeJson(admitted.body);
            EdgeAuth.checkOrg(admitted.principal, json);
            EdgeAuth.bindEndUser(admitted.principal, d, json);
            // The wire rule guards what tenants send; a service's message was built from input its own edge checked.
            if (admitted.principal.kind !== 'service') checkWireValue(d, json);
            const request = parseContract(d.request, json, `Request to ${d.subject}`);
            const principal = admitted.principal;
            // Cancelled while it was being admitted: never handled.
            if (call.cancel?.signal.aborted) throw call.cancel.signal.reason;
            // The caller's deadline (toolplane-deadline) and its cancel end the work done for it, like a shutdown does.
            const deadline = deadlineOf(msg.headers?.get(Headers.DEADLINE), d.subject);
            const signal =
              deadline || call.cancel
                ? AbortSignal.any([
                    this.abandon.signal,
                    ...(deadline ? [deadline.signal] : []),
                    ...(call.cancel ? [call.cancel.signal] : []),
                  ])
                : this.abandon.signal;
            const progress =
              msg.reply && msg.headers?.get(Headers.PROGRESS) === '1' ? this.progressOf(call) : undefined;
            let result: unknown;
            try {
              result = await requestContext.run(
                { signal, ...(deadline ? { deadline: deadline.at } : {}), ...(progress ? { progress } : {}) },
                async () =>
                  lastValueFrom(
                    this.transformToObservable(await handler(request, new BaseRpcContext([d.subject, principal]))),
                  ),
              );
            } finally {
              deadline?.clear();
            }
            const reply = encodeJson(this.checkReply(d, result));
            const limit = (this.opts.nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM;
            if (reply.byteLength > limit) {
              throw new ToolplaneError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                `The reply of ${d.subject} would be ${reply.byteLength} bytes; the bus carries at most ${limit}`,
                {
                  bytes: reply.byteLength,
                  limit,
                },
              );
            }
            this.respond(call, reply);
          } catch (e) {
            const traceId = span.spanContext().traceId;
            const body = toErrorBody(e, traceId);
            span.setStatus({ code: SpanStatusCode.ERROR, message: body.code });
            span.setAttribute('toolplane.error.code', body.code);
            if (body.code === ErrorCode.INTERNAL)
              this.log.error(`Unhandled error serving ${d.subject}: ${(e as Error)?.stack ?? String(e)}`);
            else if (isDependencyDown(e))
              this.log.warn(`A dependency is unavailable serving ${d.subject}: ${(e as Error).message}`);
            call.sealedFor ??= sealedForOf(e);
            this.respond(call, encodeJson({ error: body }));
          } finally {
            span.end();
          }
        },
      ),
    );
  }

  /** The request's progress reporter (the caller asked for progress): bounded, sealed like the reply. */
  private progressOf(call: InFlight): (p: Parameters<ProgressSender['report']>[0]) => void {
    const sender = new ProgressSender(call.msg, {
      intervalMs: this.opts.progress?.intervalMs ?? PROGRESS_INTERVAL_MS,
      max: this.opts.progress?.max ?? MAX_PROGRESS_MESSAGES,
      burst: this.opts.progress?.burst ?? PROGRESS_BURST,
      sealer: this.opts.auth.sealer,
      ...(call.sealedFor ? { sealedFor: call.sealedFor } : {}),
    });
    call.progress = sender;
    return (p) => sender.report(p);
  }

  /** Plain JSON to agent runtimes; sealed back to a service that sent a sealed request. Once per request, after its last progress. */
  private respond(call: InFlight, body: Uint8Array): void {
    call.progress?.close(true);
    if (call.answered || !call.msg.reply) return;
    call.answered = true;
    if (!call.sealedFor) return void call.msg.respond(body);
    const sealed = this.opts.auth.sealer.sealReply(call.msg.subject, call.sealedFor.app, call.sealedFor.nonce, body);
    const h = natsHeaders();
    h.set(Headers.SERVICE_SEAL, sealed.header);
    call.msg.respond(sealed.data, { headers: h });
  }

  private checkReply(d: RequestDescriptor, result: unknown): unknown {
    try {
      return parseContract(d.reply, result, `Reply of ${d.subject}`);
    } catch (e) {
      this.log.error((e as Error).message);
      throw new ToolplaneError(ErrorCode.INTERNAL, 'Internal error', undefined, { cause: e });
    }
  }
}

/** A little past the caller's deadline (clocks of two hosts differ): its work is then given up. */
const DEADLINE_GRACE_MS = 1000;
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The abort signal of a request's deadline header (epoch ms): aborted with a typed REQUEST_TIMEOUT
 * once the caller has given up waiting. No header, or one that is not a time: none.
 */
function deadlineOf(
  header: string | undefined,
  subject: string,
): { signal: AbortSignal; at: number; clear: () => void } | undefined {
  if (!header || !/^\d{1,15}$/.test(header)) return undefined;
  const ctrl = new AbortController();
  const ms = Math.min(Math.max(0, Number(header) + DEADLINE_GRACE_MS - Date.now()), MAX_TIMER_MS);
  const timer = setTimeout(
    () =>
      ctrl.abort(
        new ToolplaneError(
          ErrorCode.REQUEST_TIMEOUT,
          `The caller of ${subject} stopped waiting (its deadline passed): the work for it was stopped`,
        ),
      ),
    ms,
  );
  timer.unref();
  return { signal: ctrl.signal, at: Number(header), clear: () => clearTimeout(timer) };
}
