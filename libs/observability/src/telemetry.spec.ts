import { context, isSpanContextValid, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { initTelemetry } from './telemetry';

const tracer = () => trace.getTracer('spec');

describe('tracing without an exporter (id-only spans)', () => {
  let telemetry: ReturnType<typeof initTelemetry>;

  beforeAll(() => {
    telemetry = initTelemetry('spec', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_BSP_SCHEDULE_DELAY: 2000 });
  });

  afterAll(() => telemetry.shutdown());

  it('says it exports nothing', () => {
    expect(telemetry.exporting).toBe(false);
  });

  it('starts a new sampled trace at a root, with real ids, and records nothing', () => {
    const a = tracer().startSpan('a');
    const b = tracer().startSpan('b');
    expect(isSpanContextValid(a.spanContext())).toBe(true);
    expect(a.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(a.spanContext().traceId).not.toBe(b.spanContext().traceId);
    expect(a.isRecording()).toBe(false);
  });

  it("continues the caller's trace: its trace id and flags, a span id of its own, active inside the callback", async () => {
    const caller = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
    };
    const parent = trace.setSpanContext(context.active(), caller);
    const seen = await tracer().startActiveSpan('child', {}, parent, async (span) => {
      await new Promise((r) => setImmediate(r));
      return { span: span.spanContext(), active: trace.getActiveSpan()?.spanContext() };
    });
    expect(seen.span.traceId).toBe(caller.traceId);
    expect(seen.span.traceFlags).toBe(TraceFlags.NONE);
    expect(seen.span.spanId).not.toBe(caller.spanId);
    expect(seen.active).toEqual(seen.span);
  });

  it('hands its own span on in traceparent (the W3C propagator stays registered)', () => {
    const carrier: Record<string, string> = {};
    tracer().startActiveSpan('outgoing', (span) => {
      propagation.inject(context.active(), carrier);
      const { traceId, spanId } = span.spanContext();
      expect(carrier.traceparent).toBe(`00-${traceId}-${spanId}-01`);
    });
    const extracted = trace.getSpanContext(propagation.extract(context.active(), carrier));
    expect(extracted?.traceId).toBe(carrier.traceparent!.split('-')[1]);
  });

  it('starts a new trace when asked for a root, whatever the active span', () => {
    tracer().startActiveSpan('outer', (outer) => {
      const root = tracer().startSpan('root', { root: true });
      expect(root.spanContext().traceId).not.toBe(outer.spanContext().traceId);
    });
  });
});
