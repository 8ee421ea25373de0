import { connect } from '@nats-io/transport-node';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createDatabase, withAdmin } from '../support/database';
import { adminDatabaseUrl, databaseUrlFor, natsUrl } from '../support/env';
import { startStack, type Stack } from '../support/stack';

declare global {
  var __toolplaneStack: { stack: Stack; dbName: string; containers: Array<{ stop(): Promise<unknown> }> } | undefined;
}

/**
 * One isolated environment per test run: its own database and subject/stream prefix on the real
 * NATS and Postgres, and the services started from dist/.
 * Where NATS and Postgres come from: NATS_URL / DATABASE_URL when set; else this machine's
 * (127.0.0.1:4222 and :5432) when they answer; else containers via testcontainers when Docker runs.
 */
export default async function globalSetup(): Promise<void> {
  if (globalThis.__toolplaneStack) return; // both projects share one stack
  const containers = await provideInfrastructure();
  const runId = randomBytes(4).toString('hex');
  const dbName = `tp_test_${runId}`;
  const prefix = `t${runId}`;
  await createDatabase(dbName);
  process.env.TOOLPLANE_TEST_PREFIX = prefix;
  process.env.TOOLPLANE_TEST_DB = dbName;
  process.env.TOOLPLANE_TEST_DATABASE_URL = databaseUrlFor(dbName);
  const stack = await startStack({ prefix, databaseUrl: databaseUrlFor(dbName) });
  process.env.TOOLPLANE_TEST_HEALTH_PORTS = JSON.stringify(
    Object.fromEntries([...stack.apps].map(([name, app]) => [name, app.healthPort])),
  );
  const gateway = stack.apps.get('mcp-gateway');
  if (gateway?.httpPort) process.env.TOOLPLANE_TEST_GATEWAY_URL = `http://127.0.0.1:${gateway.httpPort}`;
  globalThis.__toolplaneStack = { stack, dbName, containers };
}

async function provideInfrastructure(): Promise<Array<{ stop(): Promise<unknown> }>> {
  const explicit = process.env.NATS_URL !== undefined || process.env.DATABASE_URL !== undefined;
  const [natsOk, pgOk] = await Promise.all([natsReachable(), postgresReachable()]);
  if (natsOk === true && pgOk === true) return [];
  if (!explicit && dockerAvailable()) return startContainers();
  const problems = [
    natsOk !== true ? `NATS is not reachable at ${natsUrl()} (${natsOk}). Start nats-server -js or set NATS_URL.` : '',
    pgOk !== true
      ? `Postgres is not reachable at ${redact(adminDatabaseUrl())} (${pgOk}). Start it or set DATABASE_URL.`
      : '',
  ].filter(Boolean);
  throw new Error(problems.join('\n'));
}

async function natsReachable(): Promise<true | string> {
  try {
    const nc = await connect({ servers: natsUrl(), timeout: 3000 });
    await nc.close();
    return true;
  } catch (e) {
    return (e as Error).message;
  }
}

async function postgresReachable(): Promise<true | string> {
  return withAdmin((c) => c.query('SELECT 1')).then(
    () => true as const,
    (e: Error) => e.message,
  );
}

function dockerAvailable(): boolean {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 && r.stdout.trim().length > 0;
}

async function startContainers(): Promise<Array<{ stop(): Promise<unknown> }>> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const [nats, pg] = await Promise.all([
    new GenericContainer('nats:2.10-alpine')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start(),
    new GenericContainer('postgres:16-alpine')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start(),
  ]);
  process.env.NATS_URL = `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`;
  process.env.DATABASE_URL = `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/postgres`;
  return [nats, pg];
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}
