import { jetstreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { EVENTS_STREAM, EVENTS_SUBJECTS } from '@toolplane/contracts';
import { streamName, withPrefix } from './subjects';

/**
 * Creates a JetStream stream if it is missing (idempotent; replicas may race: a create that loses
 * to another replica's is fine once the stream is there). An existing stream is left as it is.
 * The one way Toolplane's services make their streams.
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

/** Creates the events stream if missing (idempotent; replicas may race). Returns its name. */
export function ensureEventsStream(nc: NatsConnection, prefix: string): Promise<string> {
  return ensureStream(nc, {
    name: streamName(prefix, EVENTS_STREAM),
    subjects: [withPrefix(prefix, EVENTS_SUBJECTS)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 7 * 24 * 3600 * 1e9,
    duplicate_window: 120 * 1e9,
  });
}
