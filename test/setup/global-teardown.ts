import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { rmSync } from 'node:fs';
import { dropDatabase } from '../support/database';
import { natsUrl } from '../support/env';

export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__toolplaneStack;
  if (!env) return;
  globalThis.__toolplaneStack = undefined;
  await env.stack.stop();
  await dropDatabase(env.dbName);
  await deleteStreams(env.stack.prefix);
  await Promise.all(env.containers.map((c) => c.stop()));
  for (const dir of [process.env.TOOLPLANE_TEST_KEYS_DIR, process.env.TOOLPLANE_TEST_STDIO_ROOT])
    if (dir) rmSync(dir, { recursive: true, force: true });
}

/** Removes the JetStream streams this run created (their names start with the run's prefix). */
export async function deleteStreams(prefix: string): Promise<void> {
  const nc = await connect({ servers: natsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith(`${prefix}_`)) await jsm.streams.delete(s.config.name);
    }
  } finally {
    await nc.close();
  }
}
