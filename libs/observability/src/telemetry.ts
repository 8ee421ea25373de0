import { W3CTraceContextPropagator, CompositePropagator, W3CBaggagePropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpHttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, NoopSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { z } from 'zod';

/** The standard OTel variables Toolplane reads itself (the SDK reads the rest, e.g. OTEL_TRACES_SAMPLER). */
export const otelEnvShape = {
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(1).default(2000),
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .optional(),
  OTEL_TRACES_SAMPLER_ARG: z.string().optional(),
};
export type OtelConfig = z.infer<z.ZodObject<typeof otelEnvShape>>;

export interface Telemetry {
  readonly exporting: boolean;
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK for one app. Spans are always created (trace ids reach replies,
 * errors and logs); they are exported only when an OTLP endpoint is configured.
 */
export function initTelemetry(defaultServiceName: string, cfg: OtelConfig): Telemetry {
  const endpoint = cfg.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? cfg.OTEL_EXPORTER_OTLP_ENDPOINT;
  const processors: SpanProcessor[] = [];
  if (endpoint) {
    // Exporters read OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and headers themselves.
    const exporter: SpanExporter = cfg.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json' ? new OtlpHttpJsonExporter() : new OtlpProtoExporter();
    processors.push(new BatchSpanProcessor({ exporter, scheduledDelayMillis: cfg.OTEL_BSP_SCHEDULE_DELAY }));
  }
  const sdk = new NodeSDK({
    serviceName: cfg.OTEL_SERVICE_NAME ?? defaultServiceName,
    // With no processor the SDK registers no tracer provider at all; a no-op one keeps real ids.
    spanProcessors: processors.length ? processors : [new NoopSpanProcessor()],
    instrumentations: [],
    autoDetectResources: false,
    textMapPropagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  });
  sdk.start();
  return { exporting: processors.length > 0, shutdown: () => sdk.shutdown() };
}
