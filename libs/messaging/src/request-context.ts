import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestProgress } from '@toolplane/contracts';

/** What a served request carries into everything its handler does (read by MessagingClient). */
export interface RequestContext {
  /**
   * Aborted when the work for the request must stop: the service gives it up (shutdown past its
   * grace), its caller's deadline passed, or its caller cancelled it (REQUEST_CANCELLED).
   */
  signal: AbortSignal;
  /** The caller's deadline (epoch ms, its `toolplane-deadline` header), when it sent one. */
  deadline?: number;
  /** Sends a progress report to the caller: only when the caller asked for progress. */
  progress?: (p: RequestProgress) => void;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The abort signal of the request being served, if any. */
export function currentRequestSignal(): AbortSignal | undefined {
  return requestContext.getStore()?.signal;
}

/** The caller's deadline (epoch ms) of the request being served, if it sent one: how long work done for it may wait. */
export function currentRequestDeadline(): number | undefined {
  return requestContext.getStore()?.deadline;
}

/**
 * Where progress of the request being served goes: set only when its caller asked for progress.
 * Pass it as a next hop's `RequestOptions.onProgress` to forward that hop's progress to the caller.
 */
export function currentProgressReporter(): ((p: RequestProgress) => void) | undefined {
  return requestContext.getStore()?.progress;
}

/**
 * Reports progress on the request being served (coalesced and capped per request, see
 * ProgressSender); nothing when no request is served or its caller did not ask for progress.
 */
export function reportProgress(p: RequestProgress): void {
  requestContext.getStore()?.progress?.(p);
}
