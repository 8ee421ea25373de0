/**
 * The development supervisor of `npm start` (tools/dev/supervisor.ts) with real services: a
 * SIGKILLed service comes back and serves, and a service that cannot start crash-loops and is
 * named. Apps run from dist/ on the run's NATS, under this file's own subject prefix.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Supervisor } from '../../tools/dev/supervisor';
import { testDatabaseUrl, testPrefix } from '../support/context';
import { natsUrl } from '../support/env';
import { eventually } from '../support/executions';
import { ensureTestIdentity } from '../support/identity';
import { RawClient } from '../support/nats-client';
import { entryOf, freePort, startStack, type Stack } from '../support/stack';

describe('development supervisor with real services', () => {
  const prefix = `${testPrefix()}sv`;
  const lines: string[] = [];
  const loops: string[] = [];
  const spawned: ChildProcess[] = [];
  let sut: Supervisor;
  let client: RawClient;
  /** credentials under this prefix: org tokens for the client's requests. */
  let stack: Stack;

  const app = (name: 'schema', env: Record<string, string>) => () => {
    const p = spawn(process.execPath, ['--enable-source-maps', entryOf(name)], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        NATS_URL: natsUrl(),
        SUBJECT_PREFIX: prefix,
        DATABASE_URL: testDatabaseUrl(),
        HEALTH_HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        TOOLPLANE_PROFILE: 'development',
        SERVICE_KEYS_DIR: ensureTestIdentity().keysDir,
        ...env,
      },
      stdio: 'ignore',
    });
    spawned.push(p);
    return p;
  };
  const ready = (port: number) =>
    fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['credentials'],
      env: { LOG_LEVEL: 'warn' },
      readyTimeoutMs: 120_000,
    });
    client = await RawClient.connect(prefix);
  }, 240_000);
  afterEach(async () => {
    await sut?.stopAll(5000);
    for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  }, 60_000);

  it('restarts a SIGKILLed service, which serves again', async () => {
    lines.length = 0;
    sut = new Supervisor({
      backoffMs: 100,
      backoffMaxMs: 1000,
      maxCrashes: 5,
      windowMs: 60_000,
      stableAfterMs: 60_000,
      say: (l) => lines.push(l),
      onCrashLoop: (name) => loops.push(name),
    });
    const port = await freePort();
    const first = sut.add('schema', app('schema', { HEALTH_PORT: String(port) }));
    await eventually(
      () => ready(port),
      (ok) => ok,
      120_000,
      100,
    );
    first.kill('SIGKILL');
    await eventually(
      async () => sut.processOf('schema')?.pid,
      (pid) => pid !== undefined && pid !== first.pid,
      30_000,
      50,
    );
    await eventually(
      () => ready(port),
      (ok) => ok,
      120_000,
      100,
    );
    const r = await client.call(
      'toolplane.v1.schemas.validate',
      { json_schema: { name: 'f', description: 'd', parameters: { type: 'object', properties: {} } } },
      30_000,
    );
    expect(r.health).toBeDefined();
    expect(lines.join('\n')).toMatch(/schema exited \(signal SIGKILL\); restarting it in 100 ms/);
    expect(loops).toEqual([]);
  }, 300_000);

  it('stops on a crash loop and names the service', async () => {
    lines.length = 0;
    loops.length = 0;
    sut = new Supervisor({
      backoffMs: 50,
      backoffMaxMs: 200,
      maxCrashes: 3,
      windowMs: 120_000,
      stableAfterMs: 120_000,
      say: (l) => lines.push(l),
      onCrashLoop: (name) => loops.push(name),
    });
    // An invalid environment: the app refuses to start (exit 1), every time.
    sut.add('schema', app('schema', { HEALTH_PORT: 'not-a-port' }));
    await eventually(
      async () => loops,
      (l) => l.length === 1,
      120_000,
      100,
    );
    expect(loops).toEqual(['schema']);
    expect(lines.at(-1)).toMatch(
      /^schema is crash-looping: it exited 3 times within 120 s \(last: code \d+\); stopping the stack$/,
    );
    expect(sut.processOf('schema')).toBeUndefined();
  }, 300_000);
});
