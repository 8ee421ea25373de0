import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: equal configs give equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * sha256 over the provider, its settings and its env vars' names and versions (never their
 * values): any change to the config or to one of its env vars gives a new fingerprint.
 */
export function sandboxFingerprint(
  provider: string,
  config: Record<string, unknown> | null,
  envVars: Array<{ key: string; provider: string; updatedAt: Date }>,
): string {
  const env = envVars
    .map((e) => [e.key, e.provider, e.updatedAt.toISOString()])
    .sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : 1));
  return createHash('sha256').update(canonicalJson({ provider, config, env })).digest('hex');
}
