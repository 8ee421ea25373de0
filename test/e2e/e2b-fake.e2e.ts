/**
 * The E2B fake (tools/fakes/e2b) driven by the unmodified `e2b` SDK, configured the way the
 * runner will be: E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY. What passes here is what a
 * runner-e2b can rely on when it talks to the fake instead of E2B.
 */
import { expectEventually } from '@toolplane/testing';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AuthenticationError,
  CommandExitError,
  RateLimitError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
} from 'e2b';
import { startE2bFake, type E2bFake, type E2bFakeStats } from '../../tools/fakes/e2b/e2b-fake';

const KEY = `e2b_test_${randomBytes(8).toString('hex')}`;
const RUN = randomBytes(4).toString('hex');

/** Polls until `check` holds (no sleeps standing in for events). */
async function eventually(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  await expectEventually(
    async () => {
      if (!(await check())) throw new Error(`waiting for ${what}`);
    },
    { timeoutMs, intervalMs: 50 },
  );
}

async function listIds(metadata: Record<string, string>): Promise<string[]> {
  const ids: string[] = [];
  const paginator = Sandbox.list({ query: { metadata } });
  while (paginator.hasNext) ids.push(...(await paginator.nextItems()).map((s) => s.sandboxId));
  return ids.sort();
}

describe('E2B fake: the real e2b SDK against it', () => {
  let fake: E2bFake;
  const saved = { api: process.env.E2B_API_URL, sandbox: process.env.E2B_SANDBOX_URL, key: process.env.E2B_API_KEY };

  beforeAll(async () => {
    fake = await startE2bFake({ apiKeys: [KEY] });
    process.env.E2B_API_URL = fake.apiUrl;
    process.env.E2B_SANDBOX_URL = fake.sandboxUrl;
    process.env.E2B_API_KEY = KEY;
  });
  afterAll(async () => {
    await fake?.close();
    for (const [name, value] of [
      ['E2B_API_URL', saved.api],
      ['E2B_SANDBOX_URL', saved.sandbox],
      ['E2B_API_KEY', saved.key],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  afterEach(() => fake.clearFaults());

  it('creates with metadata and envs, lists by metadata, connects, writes a file and streams python output', async () => {
    const a = await Sandbox.create({
      metadata: { suite: RUN, role: 'worker' },
      envs: { GREETING: 'hello from create' },
      timeoutMs: 120_000,
    });
    const b = await Sandbox.create({ metadata: { suite: RUN, role: 'other' }, timeoutMs: 120_000 });
    expect(await listIds({ suite: RUN, role: 'worker' })).toEqual([a.sandboxId]);
    expect(await listIds({ suite: RUN })).toEqual([a.sandboxId, b.sandboxId].sort());

    const sbx = await Sandbox.connect(a.sandboxId);
    expect(sbx.sandboxId).toBe(a.sandboxId);
    const info = await sbx.getInfo();
    expect([info.metadata, info.state, info.templateId]).toEqual([{ suite: RUN, role: 'worker' }, 'running', 'base']);

    await sbx.files.write('/home/user/input.txt', 'contents of the file');
    expect(await sbx.files.read('input.txt')).toBe('contents of the file');
    expect(await sbx.files.exists('/home/user/input.txt')).toBe(true);
    expect(await sbx.files.exists('/home/user/missing.txt')).toBe(false);
    // The script prints, then waits for a file that only the onStdout callback creates: it can
    // finish only if its first line reached the client while it was still running.
    await sbx.files.write(
      'script.py',
      [
        'import os, time',
        "print(open('/home/user/input.txt').read(), flush=True)",
        "while not os.path.exists('/home/user/go'):",
        '    time.sleep(0.02)',
        "print(os.environ['GREETING'], '|', os.environ['PER_COMMAND'], '|', os.getcwd())",
      ].join('\n'),
    );
    const chunks: string[] = [];
    const result = await sbx.commands.run('python3 script.py', {
      envs: { PER_COMMAND: 'from run' },
      timeoutMs: 30_000,
      onStdout: async (data) => {
        chunks.push(data);
        if (chunks.length === 1) await sbx.files.write('/home/user/go', '');
      },
    });
    expect(chunks[0]).toBe('contents of the file\n');
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: 'contents of the file\nhello from create | from run | /home/user\n',
      stderr: '',
    });
    // Per-command envs override the sandbox's.
    expect((await sbx.commands.run('echo "$GREETING"', { envs: { GREETING: 'overridden' } })).stdout).toBe(
      'overridden\n',
    );
    await Promise.all([a.kill(), b.kill()]);
  });

  it('a failing command throws CommandExitError with its exit code and stderr; a slow one times out and is killed', async () => {
    const sbx = await Sandbox.create({ metadata: { suite: RUN } });
    const failed = await sbx.commands.run('echo partial; echo broken >&2; exit 3').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect([
      (failed as CommandExitError).exitCode,
      (failed as CommandExitError).stderr,
      (failed as CommandExitError).stdout,
    ]).toEqual([3, 'broken\n', 'partial\n']);
    expect((failed as CommandExitError).error).toBe('exit status 3');

    const slow = await sbx.commands.run('sleep 60', { timeoutMs: 500 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(TimeoutError);
    const mine = () => fake.stats().sandboxes.find((s) => s.sandboxId === sbx.sandboxId);
    await eventually(() => mine()?.runningCommands === 0, 'the timed-out command to be killed');
    // The sandbox itself lives on.
    expect((await sbx.commands.run('echo still here')).stdout).toBe('still here\n');
    await sbx.kill();
  });

  it('setTimeout ends a sandbox when it passes; kill ends one at once; neither is listed after', async () => {
    const expiring = await Sandbox.create({ metadata: { suite: RUN, role: 'expiring' }, timeoutMs: 300_000 });
    const killed = await Sandbox.create({ metadata: { suite: RUN, role: 'killed' }, timeoutMs: 300_000 });
    await expiring.files.write('/home/user/state.txt', 'kept until expiry');
    const expiredBefore = fake.stats().expired;
    await expiring.setTimeout(1_000);
    await eventually(
      () =>
        expiring.getInfo().then(
          () => false,
          (e: unknown) => e instanceof SandboxNotFoundError,
        ),
      'the sandbox to expire',
    );
    expect(fake.stats().expired).toBe(expiredBefore + 1);
    expect(await expiring.isRunning()).toBe(false);
    await expect(expiring.files.read('/home/user/state.txt')).rejects.toBeInstanceOf(TimeoutError);

    expect(await killed.kill()).toBe(true);
    expect(await Sandbox.kill(killed.sandboxId)).toBe(false);
    await expect(Sandbox.connect(killed.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
    expect(await listIds({ suite: RUN, role: 'expiring' })).toEqual([]);
    expect(await listIds({ suite: RUN, role: 'killed' })).toEqual([]);
  });

  it('answers a wrong API key with 401 and injected faults with E2B status codes', async () => {
    await expect(Sandbox.create({ apiKey: 'e2b_wrong' })).rejects.toBeInstanceOf(AuthenticationError);
    await expect(Sandbox.list({ apiKey: 'e2b_wrong' }).nextItems()).rejects.toBeInstanceOf(AuthenticationError);

    fake.failNext('create', 429);
    await expect(Sandbox.create()).rejects.toBeInstanceOf(RateLimitError);
    fake.failNext('create', 500);
    const internal = await Sandbox.create().catch((e: unknown) => e);
    expect(internal).toBeInstanceOf(SandboxError);
    expect(internal).not.toBeInstanceOf(RateLimitError);
    expect((internal as SandboxError).statusCode).toBe(500);
    // A 429 with Retry-After is retried by the SDK itself.
    fake.failNext('create', 429, { retryAfterSec: 0 });
    const retried = await Sandbox.create({ metadata: { suite: RUN } });

    fake.failNext('command', 429);
    await expect(retried.commands.run('echo hi')).rejects.toBeInstanceOf(RateLimitError);
    fake.failNext('files', 500);
    await expect(retried.files.write('x.txt', 'x')).rejects.toBeInstanceOf(SandboxError);
    fake.failNext('list', 503);
    await expect(Sandbox.list().nextItems()).rejects.toThrow(/Service temporarily unavailable/);
    // Faults are one-shot: everything works again.
    expect((await retried.commands.run('echo recovered')).stdout).toBe('recovered\n');
    expect(fake.stats().faultsServed).toBeGreaterThanOrEqual(6);

    // The same controls over HTTP, for a fake in another process.
    const armed = await fetch(`${fake.apiUrl}/_fake/faults`, {
      method: 'POST',
      body: JSON.stringify({ op: 'connect', status: 401, count: 2 }),
    });
    expect(armed.status).toBe(200);
    await expect(Sandbox.connect(retried.sandboxId)).rejects.toBeInstanceOf(AuthenticationError);
    await expect(Sandbox.connect(retried.sandboxId)).rejects.toBeInstanceOf(AuthenticationError);
    expect((await Sandbox.connect(retried.sandboxId)).sandboxId).toBe(retried.sandboxId);
    const stats = (await (await fetch(`${fake.apiUrl}/_fake/stats`)).json()) as E2bFakeStats;
    expect(stats.sandboxes.map((s) => s.sandboxId)).toContain(retried.sandboxId);
    expect(stats.connects).toBeGreaterThanOrEqual(3);
    await retried.kill();
  });

  it('serves the v1 paths too (create, list by metadata, connect)', async () => {
    const headers = { 'X-API-KEY': KEY, 'content-type': 'application/json' };
    const created = await fetch(`${fake.apiUrl}/sandboxes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ templateID: 'base', metadata: { suite: RUN, api: 'v1' }, timeout: 60 }),
    });
    expect(created.status).toBe(201);
    const sandbox = (await created.json()) as { sandboxID: string };
    expect(sandbox).toMatchObject({
      templateID: 'base',
      clientID: expect.any(String),
      envdVersion: expect.any(String),
    });
    const listed = (await (
      await fetch(`${fake.apiUrl}/sandboxes?metadata=${encodeURIComponent(`suite=${RUN}&api=v1`)}`, { headers })
    ).json()) as Array<{ sandboxID: string }>;
    expect(listed.map((s) => s.sandboxID)).toEqual([sandbox.sandboxID]);
    const connected = await fetch(`${fake.apiUrl}/sandboxes/${sandbox.sandboxID}/connect`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ timeout: 60 }),
    });
    expect(connected.status).toBe(200);
    expect(await Sandbox.kill(sandbox.sandboxID)).toBe(true);
  });

  it('a sandbox that dies under a running command fails the command, then is not found', async () => {
    const sbx = await Sandbox.create({ metadata: { suite: RUN } });
    fake.killSandboxDuringNextCommand();
    const run = await sbx.commands.run('sleep 30; echo never').catch((e: unknown) => e);
    // The SDK probes /health after a cut stream: a dead sandbox makes it a TimeoutError.
    expect(run).toBeInstanceOf(TimeoutError);
    expect((run as Error).message).toMatch(/killed or reached its end of life/);
    await expect(sbx.getInfo()).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.commands.run('echo hi')).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.files.read('anything.txt')).rejects.toBeInstanceOf(SandboxError);
    expect(await sbx.isRunning()).toBe(false);
  });

  it('a stream whose connection drops fails the command; the sandbox stays usable', async () => {
    const sbx = await Sandbox.create({ metadata: { suite: RUN } });
    fake.dropNextStream();
    const run = await sbx.commands.run('echo before the drop; sleep 0.2; echo after').catch((e: unknown) => e);
    // The sandbox answers its health probe, so this is a plain transport failure.
    expect(run).toBeInstanceOf(SandboxError);
    expect(run).not.toBeInstanceOf(TimeoutError);
    expect(run).not.toBeInstanceOf(CommandExitError);
    expect(await sbx.isRunning()).toBe(true);
    expect((await sbx.commands.run('echo fine')).stdout).toBe('fine\n');
    await sbx.kill();
  });

  it('create waits at least createLatencyMs', async () => {
    fake.setCreateLatencyMs(300);
    try {
      const started = performance.now();
      const sbx = await Sandbox.create({ metadata: { suite: RUN } });
      // A lower bound only: the server waits 300 ms (timers may round by a millisecond).
      expect(performance.now() - started).toBeGreaterThanOrEqual(299);
      await sbx.kill();
    } finally {
      fake.setCreateLatencyMs(0);
    }
  });

  it('isolates commands: no host /work, no network, no other sandbox, none of the host env', async () => {
    const a = await Sandbox.create({ metadata: { suite: RUN } });
    const b = await Sandbox.create({ metadata: { suite: RUN } });
    await a.files.write('/home/user/secret.txt', 'only for a');
    await a.files.write('/tmp/scratch.txt', 'a tmp');

    const work = await b.commands.run('test -e /work && echo visible || echo absent');
    expect(work.stdout).toBe('absent\n');
    const { port, hostname } = new URL(fake.apiUrl);
    const net = await b.commands
      .run(`python3 -c "import socket; socket.create_connection(('${hostname}', ${port}), timeout=3)"`)
      .catch((e: unknown) => e);
    expect(net).toBeInstanceOf(CommandExitError);
    expect((net as CommandExitError).stderr).toMatch(/Network is unreachable|Connection refused|Errno/);
    const look = await b.commands.run(
      'cat /home/user/secret.txt /tmp/scratch.txt 2>&1; find / -name secret.txt 2>/dev/null; true',
    );
    expect(look.stdout).not.toContain('only for a');
    expect(look.stdout).not.toContain('a tmp');
    await expect(b.files.read('/home/user/secret.txt')).rejects.toThrow(/does not exist/);
    const env = (await b.commands.run('env')).stdout;
    const names = env
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0])
      .sort();
    expect(names).toEqual(['HOME', 'PATH', 'PWD', 'SHLVL', '_']);
    // a's files are where a left them, and a's commands see them.
    expect((await a.commands.run('cat /home/user/secret.txt /tmp/scratch.txt')).stdout).toBe('only for aa tmp');
    await Promise.all([a.kill(), b.kill()]);
  });

  it('binds readable host paths read-only, and runs without bubblewrap in process isolation', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'e2b-fake-readable-'));
    chmodSync(shared, 0o755);
    writeFileSync(join(shared, 'wheel.txt'), 'from the host');
    chmodSync(join(shared, 'wheel.txt'), 0o644);
    const bound = await startE2bFake({ apiKeys: [KEY], readable: [shared] });
    const plain = await startE2bFake({ apiKeys: [KEY], isolation: 'process' });
    try {
      const sbx = await Sandbox.create({ apiUrl: bound.apiUrl, sandboxUrl: bound.sandboxUrl });
      expect((await sbx.commands.run(`cat ${shared}/wheel.txt`)).stdout).toBe('from the host');
      await expect(sbx.commands.run(`echo x > ${shared}/new.txt`)).rejects.toBeInstanceOf(CommandExitError);

      const unconfined = await Sandbox.create({ apiUrl: plain.apiUrl, sandboxUrl: plain.sandboxUrl });
      await unconfined.files.write('/home/user/data.txt', 'plain process');
      expect((await unconfined.commands.run('cat data.txt')).stdout).toBe('plain process');
    } finally {
      await Promise.all([bound.close(), plain.close()]);
      rmSync(shared, { recursive: true, force: true });
    }
  });
});
