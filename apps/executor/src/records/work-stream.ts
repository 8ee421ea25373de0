import { AckPolicy, DeliverPolicy, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ExecutionWork } from '@toolplane/contracts';
import { ensureStream, streamName, withPrefix } from '@toolplane/messaging';
import type { ExecutorConfig } from '../executor.config';

/** The async work stream of this deployment (prefix) and its one durable consumer, shared by every executor. */
export function workStreamNames(prefix: string): { stream: string; consumer: string; subject: string } {
  return {
    stream: streamName(prefix, ExecutionWork.stream),
    consumer: ExecutionWork.servedBy,
    subject: withPrefix(prefix, ExecutionWork.subject),
  };
}

type WorkConfig = Pick<
  ExecutorConfig,
  'EXECUTION_ACK_WAIT_MS' | 'EXECUTION_MAX_DELIVER' | 'EXECUTION_ASYNC_CONCURRENCY' | 'NATS_STREAM_REPLICAS'
>;

/**
 * Creates (idempotently; replicas may race) the work-queue stream — WorkQueue retention: a message
 * is gone once acknowledged — and its durable pull consumer: explicit acks, redelivery after
 * EXECUTION_ACK_WAIT_MS, at most EXECUTION_MAX_DELIVER deliveries. File storage: a NATS restart
 * keeps the backlog; NATS_STREAM_REPLICAS servers of a cluster keep it (the consumer follows the
 * stream's replica count).
 */
export async function ensureWorkStream(nc: NatsConnection, prefix: string, c: WorkConfig): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const { stream, consumer, subject } = workStreamNames(prefix);
  await ensureStream(nc, {
    name: stream,
    subjects: [subject],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: c.NATS_STREAM_REPLICAS,
    max_age: 7 * 24 * 3600 * 1e9,
    duplicate_window: 120 * 1e9,
  });
  const config = {
    durable_name: consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: c.EXECUTION_ACK_WAIT_MS * 1e6,
    max_deliver: c.EXECUTION_MAX_DELIVER,
    max_ack_pending: Math.max(1000, c.EXECUTION_ASYNC_CONCURRENCY * 64),
    filter_subject: subject,
  };
  try {
    await jsm.consumers.info(stream, consumer);
  } catch {
    try {
      await jsm.consumers.add(stream, config);
    } catch (e) {
      await jsm.consumers.info(stream, consumer).catch(() => {
        throw e;
      });
    }
  }
}

/**
 * Whether the work queue holds nothing deliverable and nothing in flight: a queued record older
 * than that lost its message (or its message ran out of deliveries) and may be queued again.
 */
export async function workQueueIdle(nc: NatsConnection, prefix: string): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  const { stream, consumer } = workStreamNames(prefix);
  const info = await jsm.consumers.info(stream, consumer);
  return info.num_pending === 0 && info.num_ack_pending === 0;
}
