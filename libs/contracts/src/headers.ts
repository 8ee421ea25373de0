/** Header names carried on NATS messages. */
export const Headers = {
  TRACEPARENT: 'traceparent',
  TRACESTATE: 'tracestate',
  /** Absolute deadline (epoch ms) by which the caller stops waiting. */
  DEADLINE: 'toolplane-deadline',
} as const;
