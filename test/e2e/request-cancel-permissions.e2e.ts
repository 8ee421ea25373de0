/**
 * Progress and cancel under the NATS authorization Toolplane ships (tools/deploy/nats-config.ts):
 * a serving app sends several messages to one reply subject (allow_responses' max), a caller
 * publishes its cancel and the serving app hears it, each with its own NATS user.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { APP_NAMES, E2bRunnerRun, type RequestProgress } from '@toolplane/contracts';
import {
  currentRequestSignal,
  EdgeAuth,
  MessagingClient,
  NatsJsonServer,
  reportProgress,
  TokenVerifier,
} from '@toolplane/messaging';
import { deferred, expectEventually } from '@toolplane/testing';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentUser, natsServerConfig } from '../../tools/deploy/nats-config';
import { eventsOf, sealerOf } from '../support/identity';
import { freePort, stopProcess } from '../support/stack';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

describe('progress and cancel with the services’ own NATS users', () => {
  const prefix = `rcp${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'tp-nats-rc-'));
  const passwords = Object.fromEntries(
    [...APP_NAMES, agentUser('runtime')].map((u) => [u, randomBytes(12).toString('hex')]),
  );
  let nats: ChildProcess;
  let url: string;
  const conns: NatsConnection[] = [];
  const as = async (user: string) => {
    const nc = await connect({
      servers: url,
      user,
      pass: passwords[user],
      inboxPrefix: `_INBOX.${user}`,
      noAsyncTraces: true,
    });
    conns.push(nc);
    return nc;
  };

  beforeAll(async () => {
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    writeFileSync(join(dir, 'toolplane-auth.conf'), natsServerConfig({ prefix, passwords }));
    writeFileSync(join(dir, 'nats-server.conf'), `listen: 127.0.0.1:${port}\ninclude ./toolplane-auth.conf\n`);
    nats = spawn(NATS_SERVER, ['-c', join(dir, 'nats-server.conf')], { stdio: 'ignore' });
    await expectEventually(async () => (await as('executor')).close(), { timeoutMs: 20_000, intervalMs: 100 });
  });
  afterAll(async () => {
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
    if (nats) await stopProcess(nats);
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets runner-e2b send progress and its reply to the executor, and the executor cancel a run', async () => {
    // runner-e2b served in process with its own user (a stand-in handler); the executor calls it with its own.
    const nc = await as('runner-e2b');
    const tokens = new TokenVerifier(() => Promise.reject(new Error('no tenants')), {
      refreshMs: 60_000,
      maxStaleMs: 60_000,
      cacheMax: 1,
    });
    const server = new NatsJsonServer({
      nc,
      prefix,
      queue: 'runner-e2b',
      maxRequestBytes: 1 << 20,
      drainTimeoutMs: 100,
      auth: new EdgeAuth(sealerOf('runner-e2b'), tokens),
      progress: { intervalMs: 0 },
    });
    const stopped = deferred<unknown>();
    server.addHandler(E2bRunnerRun.subject, async (req: { function_name: string }) => {
      const signal = currentRequestSignal()!;
      if (req.function_name === 'hold') {
        await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
        stopped.resolve(signal.reason);
      }
      for (let i = 1; i <= 3; i++) reportProgress({ progress: i, total: 3 });
      return {
        status: 'success',
        func_return: 'ok',
        stdout: [],
        stderr: [],
        duration_ms: 1,
        provider: 'e2b',
        sandbox_config_fingerprint: null,
      };
    });
    await new Promise<void>((r) => server.listen(r));
    await nc.flush();
    try {
      const executor = new MessagingClient(await as('executor'), prefix, sealerOf('executor'), eventsOf('executor'));
      const run = (fn: string, opts: { signal?: AbortSignal; onProgress?: (p: RequestProgress) => void }) =>
        executor.request(
          E2bRunnerRun,
          {
            org_id: 'perm',
            tool_id: 'tool-00000000-0000-4000-8000-000000000abc',
            function_name: fn,
            source_code: 'def f():\n    pass\n',
            source_type: 'python',
            args: {},
            env: {},
            timeout_ms: 5000,
          },
          { timeoutMs: 15_000, ...opts },
        );
      // Three progress messages and the reply on one reply subject: more than allow_responses' default max of 1.
      const seen: number[] = [];
      expect(await run('f', { onProgress: (p) => seen.push(p.progress) })).toMatchObject({
        status: 'success',
        func_return: 'ok',
      });
      expect(seen).toEqual([1, 2, 3]);
      const ctrl = new AbortController();
      const held = run('hold', { signal: ctrl.signal }).catch((e: unknown) => e);
      await expectEventually(() => expect(server.inFlightCount).toBe(1));
      ctrl.abort();
      expect(await held).toMatchObject({ code: 'REQUEST_CANCELLED' });
      expect(await stopped.promise).toMatchObject({ code: 'REQUEST_CANCELLED' });
    } finally {
      await server.close();
    }
  });
});
