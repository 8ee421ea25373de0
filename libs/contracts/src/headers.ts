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
  /**
   * A request its caller may cancel: the token its cancel names (a service sends its seal's nonce).
   * A cancel is a sealed broadcast to the serving app (REQUEST_CANCELS), believed only from the
   * service that sent the request.
   */
  CANCEL_TOKEN: 'toolplane-cancel',
  /**
   * On a request: `1`, the caller takes progress messages on its reply subject. On a message to a
   * reply subject: its sequence number (1, 2, …): a progress report (RequestProgress), not the reply.
   */
  PROGRESS: 'toolplane-progress',
} as const;
