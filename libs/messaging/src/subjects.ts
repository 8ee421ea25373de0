/**
 * A subject prefix isolates one deployment (or one test run) from another on a shared NATS:
 * every subject and stream name gets it. Empty in production.
 */
export function withPrefix(prefix: string, subject: string): string {
  return prefix ? `${prefix}.${subject}` : subject;
}

export function streamName(prefix: string, base: string): string {
  return prefix ? `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_${base}` : base;
}
