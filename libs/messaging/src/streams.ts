import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { EVENTS_STREAM, EVENTS_SUBJECTS } from '@toolplane/contracts';
import { streamName, withPrefix } from './subjects';

/** Creates the events stream if missing (idempotent; replicas may race). Returns its name. */
export async function ensureEventsStream(nc: NatsConnection, prefix: string): Promise<string> {
  const jsm = await jetstreamManager(nc);
  const name = streamName(prefix, EVENTS_STREAM);
  const subjects = [withPrefix(prefix, EVENTS_SUBJECTS)];
  try {
    await jsm.streams.info(name);
  } catch {
    try {
      await jsm.streams.add({
        name,
        subjects,
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        max_age: 7 * 24 * 3600 * 1e9,
        duplicate_window: 120 * 1e9,
      });
    } catch (e) {
      // Another replica created it first.
      await jsm.streams.info(name).catch(() => {
        throw e;
      });
    }
  }
  return name;
}
