import { z } from 'zod';
import { defineEvent } from './descriptor';
import { APP_NAMES, type AppName } from './identity';

/**
 * A progress report on a request being served (MCP's notifications/progress): sent to the request's
 * reply subject, marked by Headers.PROGRESS, sealed like the reply. `progress` should grow with
 * each report; `total` when known.
 */
export const RequestProgress = z.object({
  progress: z.number(),
  total: z.number().optional(),
  message: z.string().max(1000).optional(),
});
export type RequestProgress = z.infer<typeof RequestProgress>;

/**
 * Progress messages of one request are paced by a token bucket: PROGRESS_BURST at once, then one
 * per PROGRESS_INTERVAL_MS; reports past that are coalesced (the latest wins).
 */
export const PROGRESS_INTERVAL_MS = 50;
export const PROGRESS_BURST = 8;
/** Progress messages one request sends at most (later reports are dropped; the reply still goes). */
export const MAX_PROGRESS_MESSAGES = 1000;

function requestCancelled<A extends AppName>(app: A) {
  return defineEvent({
    subject: `toolplane.internal.v1.events.${app}-request.cancelled`,
    publishedBy: APP_NAMES,
    summary: `A service cancelled its request to ${app}: the replica serving it stops the work.`,
    payload: z.object({ token: z.string().min(1).max(64) }),
    sealed: { from: APP_NAMES, to: app },
  });
}

/**
 * Internal sealed broadcasts, one per serving app: a caller gave up a request it sent (its
 * Headers.CANCEL_TOKEN named). Every replica of the app receives it; the one serving that token,
 * for that very caller, aborts the handler's signal with REQUEST_CANCELLED; the others ignore it.
 */
export const REQUEST_CANCELS = Object.fromEntries(APP_NAMES.map((app) => [app, requestCancelled(app)])) as {
  readonly [A in AppName]: ReturnType<typeof requestCancelled<A>>;
};
