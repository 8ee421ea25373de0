/** Header names carried on NATS messages. */
export const Headers = {
  TRACEPARENT: 'traceparent',
  TRACESTATE: 'tracestate',
  /** Absolute deadline (epoch ms) by which the caller stops waiting. */
  DEADLINE: 'toolplane-deadline',
  /** An agent runtime's org token: `Bearer <jwt>`, exactly one, on every public request. */
  AUTHORIZATION: 'authorization',
  /**
   * A service's sealed message: `v1 <app> <epoch ms> <nonce>`. The body is AES-256-GCM under a key
   * only the sending and the receiving app can derive (X25519 between their identities); replies
   * to it are sealed the same way and carry the header too.
   */
  SERVICE_SEAL: 'toolplane-service',
} as const;
