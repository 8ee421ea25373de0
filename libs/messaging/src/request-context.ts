import { AsyncLocalStorage } from 'node:async_hooks';

/** What a served request carries into everything its handler does (read by MessagingClient). */
export interface RequestContext {
  /** Aborted when the service gives the request up (shutdown past its grace): work done for it stops too. */
  signal: AbortSignal;
  /** The caller's deadline (epoch ms, its `toolplane-deadline` header), when it sent one. */
  deadline?: number;
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
