import { z } from 'zod';
import { baseEnvShape, boolEnv, databaseEnvShape, parseEnv } from '@toolplane/platform';

const ms = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const HOUR = 3600_000;

export const executorEnvShape = {
  ...baseEnvShape,
  HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8083),
  ...databaseEnvShape,
  /** How long a call's sealed result is kept for executions.get and idempotent retries; then it is dropped (the record stays). */
  EXECUTION_RESULT_RETENTION_MS: ms(24 * HOUR, 1000),
  /** How long finished execution records (no args, no results) are kept. */
  EXECUTION_RECORD_RETENTION_MS: ms(30 * 24 * HOUR, 1000),
  /** How long an idempotency key answers with its first call's outcome (per org). */
  EXECUTION_IDEMPOTENCY_WINDOW_MS: ms(24 * HOUR, 1000),
  /** How long a call waits for approval before it expires. */
  EXECUTION_APPROVAL_TTL_MS: ms(24 * HOUR, 1000),
  /**
   * Sync calls without an idempotency key are recorded after they answer, off the hot path: their
   * records are sealed and inserted together at most this long after the call (or sooner, once
   * EXECUTION_WRITE_BEHIND_BATCH are pending). At most EXECUTION_WRITE_BEHIND_MAX wait in memory:
   * past that, calls wait for room before answering.
   */
  EXECUTION_WRITE_BEHIND_MS: ms(200, 1),
  EXECUTION_WRITE_BEHIND_BATCH: ms(256, 1),
  EXECUTION_WRITE_BEHIND_MAX: ms(10_000, 1),
  /**
   * Read your writes: executions.get of an id handed out less than this long ago, whose record is
   * not written yet (a sync call's record follows its answer, written by the replica that ran it),
   * waits for it until the id is this old (bounded by the request's deadline); an older id not
   * found is EXECUTION_NOT_FOUND at once. Covers EXECUTION_WRITE_BEHIND_MS and a slow write.
   */
  EXECUTION_READ_WAIT_MS: ms(5000, 0),
  /**
   * Publish execution.completed|failed for plain sync calls too (one JetStream message per call, off
   * the hot path but not free). Off: their caller has the outcome and executions.get the record;
   * every durable call (idempotency key, async, approval, client-side) publishes its events always.
   */
  EXECUTION_SYNC_EVENTS: boolEnv.default(false),
  /** A duplicate (same idempotency key) re-reads the first call's record at least this often while it waits. */
  EXECUTION_WAIT_POLL_MS: ms(500, 10),
  /** Every executor says it is alive this often (executor.instances). */
  EXECUTOR_HEARTBEAT_MS: ms(1000, 50),
  /** An executor silent this long is dead: its claimed runs fail with EXECUTOR_LOST (or run again: tools with metadata_.idempotent). */
  EXECUTOR_LOST_AFTER_MS: ms(10_000, 200),
  /** How often each executor expires pending approvals, settles lost claims, requeues stuck async calls and drops old results. */
  EXECUTION_SWEEP_MS: ms(1000, 50),
  /** Async calls one executor runs at once (taken from the work queue). */
  EXECUTION_ASYNC_CONCURRENCY: ms(16, 1),
  /** Work-queue ack wait: a taken message not acknowledged (nor kept alive) this long goes to another executor. */
  EXECUTION_ACK_WAIT_MS: ms(30_000, 1000),
  /** Deliveries of one work-queue message at most (then the sweep requeues the call if it is still queued). */
  EXECUTION_MAX_DELIVER: ms(20, 1),
  /** A queued async call with no progress this long is put on the work queue again (the claim keeps it from running twice). */
  EXECUTION_REQUEUE_AFTER_MS: ms(60_000, 1000),
  /** How often every replica publishes execution events and work left in its outbox. */
  EXECUTOR_OUTBOX_RELAY_MS: ms(1000, 50),
  /** An outbox message this old is the relay's (younger ones are still being published by their writer). */
  EXECUTOR_OUTBOX_RELAY_AFTER_MS: ms(2000),
  EXECUTE_DEFAULT_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  EXECUTE_MAX_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  TOOL_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  TOOL_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  REGISTRY_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** Bound on the credentials service's answer (it may call the org's webhook, up to 10 s). */
  CREDENTIALS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  /**
   * Upper bound on reusing an env reply that credentials marks reusable (orgs without a webhook);
   * CredentialsChanged broadcasts end reuse at once. 0: ask credentials on every call.
   */
  CREDENTIALS_ENV_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  CREDENTIALS_ENV_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  /** Most calls one execute-batch request may carry (more: BATCH_TOO_LARGE, nothing runs). */
  EXECUTE_BATCH_MAX_CALLS: z.coerce.number().int().min(1).max(1024).default(64),
  /** Most parallel-safe calls of one batch running at once. */
  EXECUTE_BATCH_MAX_CONCURRENCY: z.coerce.number().int().min(1).default(8),
  /** Bound on a runner's answer about a tool's environment (toolplane.v1.tools.environment, the prepare on upsert). */
  RUNNER_ENVIRONMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** Extra time the executor waits for a runner beyond the tool's own timeout. */
  RUNNER_REPLY_MARGIN_MS: z.coerce.number().int().min(100).default(3000),
};
export type ExecutorConfig = z.infer<z.ZodObject<typeof executorEnvShape>>;

export function loadExecutorConfig(env: NodeJS.ProcessEnv = process.env): ExecutorConfig {
  const c = parseEnv('executor', executorEnvShape, env);
  if (c.EXECUTE_DEFAULT_TIMEOUT_MS > c.EXECUTE_MAX_TIMEOUT_MS) {
    throw new Error(
      'executor: invalid configuration\n  EXECUTE_DEFAULT_TIMEOUT_MS: must not exceed EXECUTE_MAX_TIMEOUT_MS',
    );
  }
  return c;
}
