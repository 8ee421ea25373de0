import { connect } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { createDatabase, withAdmin } from '../support/database';
import { ADMIN_DATABASE_URL, NATS_URL, databaseUrlFor } from '../support/env';
import { startStack, type Stack } from '../support/stack';

declare global {
  var __toolplaneStack: { stack: Stack; dbName: string } | undefined;
}

/**
 * One isolated environment per test run: its own database and subject/stream prefix on the real
 * NATS and Postgres, and the four services started from dist/.
 */
export default async function globalSetup(): Promise<void> {
  if (globalThis.__toolplaneStack) return; // both projects share one stack
  await checkNats();
  await withAdmin((c) => c.query('SELECT 1')).catch((e: Error) => {
    throw new Error(`Postgres is not reachable at ${redact(ADMIN_DATABASE_URL)} (${e.message}). Start it or set DATABASE_URL.`);
  });
  const runId = randomBytes(4).toString('hex');
  const dbName = `tp_test_${runId}`;
  const prefix = `t${runId}`;
  await createDatabase(dbName);
  process.env.TOOLPLANE_TEST_PREFIX = prefix;
  process.env.TOOLPLANE_TEST_DB = dbName;
  process.env.TOOLPLANE_TEST_DATABASE_URL = databaseUrlFor(dbName);
  const stack = await startStack({ prefix, databaseUrl: databaseUrlFor(dbName) });
  globalThis.__toolplaneStack = { stack, dbName };
}

async function checkNats(): Promise<void> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 3000 });
    await nc.close();
  } catch (e) {
    throw new Error(`NATS is not reachable at ${NATS_URL} (${(e as Error).message}). Start nats-server -js or set NATS_URL.`);
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}
