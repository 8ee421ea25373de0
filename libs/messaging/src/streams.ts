import { jetstreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { EVENTS_STREAM, EVENTS_SUBJECTS } from '@toolplane/contracts';
import { streamName, withPrefix } from './subjects';

/**
 * Creates a JetStream stream if it is missing (idempotent; replicas may race: a create that loses
 * to another replica's is fine once the stream is there). An existing stream is left as it is,
 * its replica count included. The one way Toolplane's services make their streams; each caller
 * passes `num_replicas` from its config (NATS_STREAM_REPLICAS, MessagingClient.streamReplicas).
 */
export async function ensureStream(
  nc: NatsConnection,
  config: Partial<StreamConfig> & { name: string },
): Promise<string> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(config.name);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (e) {
      // Another replica created it first.
      await jsm.streams.info(config.name).catch(() => {
        throw e;
      });
    }
  }
  return config.name;
}

/**
 * Creates the events stream if missing (idempotent; replicas may race), on `replicas` servers of
 * a JetStream cluster. Returns its name.
 */
export function ensureEventsStream(nc: NatsConnection, prefix: string, replicas = 1): Promise<string> {
  return ensureStream(nc, {
    name: streamName(prefix, EVENTS_STREAM),
    num_replicas: replicas,
    subjects: [withPrefix(prefix, EVENTS_SUBJECTS)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 7 * 24 * 3600 * 1e9,
    duplicate_window: 120 * 1e9,
  });
}
