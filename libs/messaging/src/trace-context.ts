import { context, propagation, trace, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';

const setter: TextMapSetter<MsgHdrs> = { set: (carrier, key, value) => carrier.set(key, value) };
const getter: TextMapGetter<MsgHdrs | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: (carrier) => (carrier ? [...carrier.keys()] : []),
};

/** W3C trace context of `ctx` into fresh NATS headers. */
export function injectTraceContext(ctx: Context = context.active()): MsgHdrs {
  const h = natsHeaders();
  propagation.inject(ctx, h, setter);
  return h;
}

/** The caller's trace context from NATS headers (the root context when there is none). */
export function extractTraceContext(h: MsgHdrs | undefined): Context {
  return propagation.extract(context.active(), h, getter);
}

export function currentTraceId(): string {
  return trace.getActiveSpan()?.spanContext().traceId ?? '';
}
