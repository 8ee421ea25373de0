import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack, type Stack, type StackOptions } from '../../test/support/stack';
import { deleteStreams } from '../../test/setup/global-teardown';

export interface BenchStack {
  stack: Stack;
  client: RawClient;
  prefix: string;
  db: string;
  /** Stops the apps and the client, deletes the prefix's streams and drops the database. */
  stop(): Promise<void>;
}

/**
 * A stack of a bench's own: a fresh database and subject prefix on the local NATS and Postgres, the
 * apps started from dist/ (StackOptions but the prefix and database), and a client on the prefix.
 */
export async function benchStack(opts: Omit<StackOptions, 'prefix' | 'databaseUrl'> = {}): Promise<BenchStack> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  let stack: Stack | undefined;
  try {
    stack = await startStack({ env: { LOG_LEVEL: 'warn' }, ...opts, prefix, databaseUrl: databaseUrlFor(db) });
    const client = await RawClient.connect(prefix);
    const running = stack;
    return {
      stack,
      client,
      prefix,
      db,
      async stop() {
        await client.close();
        await running.stop();
        await deleteStreams(prefix);
        await dropDatabase(db);
      },
    };
  } catch (e) {
    await stack?.stop();
    await deleteStreams(prefix);
    await dropDatabase(db);
    throw e;
  }
}
