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
  /** On every event a service publishes: the app that published it (one of its descriptor's `publishedBy`). */
  EVENT_PUBLISHER: 'toolplane-publisher',
  /**
   * On every event a service publishes: `v1 <epoch ms> <event id> <signature>`, the signature
   * Ed25519 (base64url) by the publisher's event signing key over
   * `toolplane/event/v1 NUL subject NUL event id NUL publisher NUL epoch ms NUL` then the body bytes;
   * the subject with the deployment prefix, the event id the JetStream msgID (a fresh id for a
   * broadcast). Consumers drop an event without a valid one from an app in `publishedBy`.
   */
  EVENT_SIGNATURE: 'toolplane-event-signature',
} as const;
