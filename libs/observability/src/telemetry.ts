import {
  context,
  isSpanContextValid,
  propagation,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator, CompositePropagator, W3CBaggagePropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpHttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, RandomIdGenerator, type SpanExporter } from '@opentelemetry/sdk-trace';
import { z } from 'zod';

/** The standard OTel variables Toolplane reads itself (the SDK reads the rest, e.g. OTEL_TRACES_SAMPLER). */
export const otelEnvShape = {
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(1).default(2000),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .optional(),
  OTEL_TRACES_SAMPLER_ARG: z.string().optional(),
};
export type OtelConfig = z.infer<z.ZodObject<typeof otelEnvShape>>;

export interface Telemetry {
  readonly exporting: boolean;
  shutdown(): Promise<void>;
}

/**
 * Tracing for one app. With an OTLP endpoint: the OpenTelemetry SDK, every span recorded and
 * exported. Without one: spans that record nothing but carry real ids (IdOnlyTracer), so trace ids
 * still reach replies, errors and logs and the caller's trace context still flows on — at the cost
 * of an id per span instead of a recorded span (about a tenth of a millisecond per call through
 * two services, measured with bench:mcp).
 */
export function initTelemetry(defaultServiceName: string, cfg: OtelConfig): Telemetry {
  const endpoint = cfg.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? cfg.OTEL_EXPORTER_OTLP_ENDPOINT;
  const propagator = new CompositePropagator({
    propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
  });
  if (!endpoint) {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    propagation.setGlobalPropagator(propagator);
    trace.setGlobalTracerProvider(new IdOnlyTracerProvider());
    return {
      exporting: false,
      shutdown: async () => {
        trace.disable();
        propagation.disable();
        context.disable();
      },
    };
  }
  // Exporters read OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and headers themselves.
  const exporter: SpanExporter =
    cfg.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json' ? new OtlpHttpJsonExporter() : new OtlpProtoExporter();
  const sdk = new NodeSDK({
    serviceName: cfg.OTEL_SERVICE_NAME ?? defaultServiceName,
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: cfg.OTEL_BSP_SCHEDULE_DELAY })],
    instrumentations: [],
    autoDetectResources: false,
    textMapPropagator: propagator,
  });
  sdk.start();
  return { exporting: true, shutdown: () => sdk.shutdown() };
}

/**
 * Spans that record nothing (no attributes, events or timing are kept) but are real: each has a
 * fresh span id, its parent's trace id and flags — or, at a root, a new trace marked sampled, as the
 * SDK's default sampler would. What a participant that exports nothing owes a distributed trace.
 */
export class IdOnlyTracer implements Tracer {
  private readonly ids = new RandomIdGenerator();

  startSpan(_name: string, options?: SpanOptions, ctx: Context = context.active()): Span {
    const parent = options?.root ? undefined : trace.getSpanContext(ctx);
    const inherit = parent !== undefined && isSpanContextValid(parent);
    return trace.wrapSpanContext({
      traceId: inherit ? parent.traceId : this.ids.generateTraceId(),
      spanId: this.ids.generateSpanId(),
      traceFlags: inherit ? parent.traceFlags : TraceFlags.SAMPLED,
    });
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    ctx: Context,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    a: SpanOptions | F,
    b?: Context | F,
    c?: F,
  ): ReturnType<F> {
    const fn = (c ?? (typeof b === 'function' ? b : a)) as F;
    const options = typeof a === 'function' ? undefined : a;
    const parent = (typeof b === 'object' ? b : undefined) ?? context.active();
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), fn as (s: Span) => ReturnType<F>, undefined, span);
  }
}

class IdOnlyTracerProvider implements TracerProvider {
  private readonly tracer = new IdOnlyTracer();

  getTracer(): Tracer {
    return this.tracer;
  }
}
