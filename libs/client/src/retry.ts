import {
  SchemasGenerate,
  SchemasNormalize,
  SchemasStrictify,
  SchemasValidate,
  ToolsExecute,
  ToolsExecuteBatch,
  type RequestDescriptor,
} from '@toolplane/contracts';
import type { RetryPolicy } from './api';

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 100, maxDelayMs: 2_000 };

const READ_ONLY_SCHEMAS = new Set(
  [SchemasGenerate, SchemasValidate, SchemasStrictify, SchemasNormalize].map((d) => d.subject),
);
const EXECUTES = new Set([ToolsExecute, ToolsExecuteBatch].map((d) => d.subject));

/**
 * Whether sending this request twice has the effect of sending it once: reads (a `:read` scope,
 * the stateless schema engine), and executes that carry an `idempotency_key` (every call of a
 * batch). Anything else is sent once.
 */
export function isIdempotent(d: RequestDescriptor, req: unknown): boolean {
  if (d.scope?.endsWith(':read') || READ_ONLY_SCHEMAS.has(d.subject)) return true;
  if (!EXECUTES.has(d.subject)) return false;
  const r = req as { idempotency_key?: unknown; calls?: Array<{ idempotency_key?: unknown }> };
  if (d.subject === ToolsExecute.subject) return typeof r?.idempotency_key === 'string';
  return Array.isArray(r?.calls) && r.calls.length > 0 && r.calls.every((c) => typeof c?.idempotency_key === 'string');
}

/** Exponential backoff with full jitter: a random delay in [0, min(max, base·2^retry)). */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
