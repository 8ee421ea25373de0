import { randomBytes } from 'node:crypto';
import { expectEventually } from '@toolplane/testing';
import { startE2bFake, type E2bFake } from '../../tools/fakes/e2b/e2b-fake';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { executeOnceBuilt } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

/**
 * runner-e2b through the public API, against the E2B fake (tools/fakes/e2b) driven by the real
 * `e2b` SDK: tools with `metadata_.sandbox: "e2b"` (or an org whose default is e2b) run in reused
 * E2B sandboxes — requirements, secrets, errors, limits like runner-local —, found again after a
 * restart, replaced when the org's config changes or a call leaves anything behind, and every
 * E2B failure comes back as its typed code (or moves along the org's fallback list).
 */
describe('runner-e2b: tools in reused E2B sandboxes', () => {
  const prefix = `e2b${Math.random().toString(36).slice(2, 8)}`;
  const keyOf = () => `e2b_${randomBytes(12).toString('hex')}`;
  const org = uniqueOrg('e2b');
  const KEY = keyOf();
  const house = localWheelhouse([['tpe2b', '1.0', 'from-e2b-wheel']]);
  let fake: E2bFake;
  let stack: Stack;
  let stackOpts: StackOptions;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 120_000);
  const setKey = (o: string, value: string) =>
    req('toolplane.v1.secrets.set', { org_id: o, scope: 'sandbox', provider: 'e2b', key: 'E2B_API_KEY', value });
  const register = (
    o: string,
    source_code: string,
    extra: Record<string, unknown> = { metadata_: { sandbox: 'e2b' } },
  ) => req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code, ...extra } });
  const execute = (o: string, name: string, extra: Record<string, unknown> = {}) =>
    client.req(
      'toolplane.v1.tools.execute',
      { org_id: o, tool_name: name, args: {}, ...extra },
      { timeoutMs: 120_000 },
    );
  /** Executes, retrying while the environment is being built (ENVIRONMENT_BUILDING is retryable by contract). */
  const executeReady = (o: string, name: string, extra: Record<string, unknown> = {}) =>
    executeOnceBuilt(client, { org_id: o, tool_name: name, args: {}, ...extra });
  const until = (check: () => void | Promise<void>) => expectEventually(check, { timeoutMs: 60_000, intervalMs: 50 });
  const sandboxesOf = (o: string) => fake.stats().sandboxes.filter((s) => s.metadata['toolplane-org'] === o);
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${stack.apps.get('runner-e2b')!.healthPort}/metrics`)).text();

  beforeAll(async () => {
    fake = await startE2bFake({ readable: [house.dir] });
    stackOpts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'runner-e2b'],
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        // Room for an environment's build within a call (the runner waits at most until the tool's own timeout no longer fits).
        executor: { RUNNER_REPLY_MARGIN_MS: '20000' },
        'runner-e2b': {
          E2B_API_URL: fake.apiUrl,
          E2B_SANDBOX_URL: fake.sandboxUrl,
          E2B_PIP_FIND_LINKS: house.dir,
          E2B_PIP_NO_INDEX: 'true',
          E2B_STDOUT_LIMIT_BYTES: '4096',
        },
      },
    };
    stack = await startStack(stackOpts);
    client = await RawClient.connect(prefix);
    await setKey(org, KEY);
    await req('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      key: 'GREETING',
      value: 'hello-from-a-sandbox-secret',
      mask: false,
    });
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await fake?.close();
    house.remove();
  });
  afterEach(() => fake.clearFaults());

  it("runs a tool on E2B with its pip requirements and the org's sandbox secret, never the org's E2B key", async () => {
    await register(
      org,
      pythonTool(
        'uses_wheel',
        `import os, tpe2b\nreturn {"wheel": tpe2b.VALUE, "greeting": os.environ.get("GREETING"), "key_in_env": any("${KEY}" in v for v in os.environ.values()) or "E2B_API_KEY" in os.environ}`,
      ),
      { metadata_: { sandbox: 'e2b' }, pip_requirements: [{ name: 'tpe2b', version: '1.0' }] },
    );
    const r = await executeReady(org, 'uses_wheel');
    expect(r).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: { wheel: 'from-e2b-wheel', greeting: 'hello-from-a-sandbox-secret', key_in_env: false },
    });
    expect(r.fallback_from).toBeUndefined();
    expect(sandboxesOf(org).filter((s) => s.metadata['toolplane-requirements'] !== 'none')).toHaveLength(1);
  });

  it('a requirement that does not install is DEPENDENCY_INSTALL_FAILED naming the package, and the next call gets the same answer', async () => {
    await register(org, pythonTool('wants_missing', 'return 1'), {
      metadata_: { sandbox: 'e2b' },
      pip_requirements: [{ name: 'not-in-wheelhouse', version: '9.9' }],
    });
    for (let i = 0; i < 2; i++) {
      const r = await executeReady(org, 'wants_missing');
      expect(r).toMatchObject({ status: 'error', provider: 'e2b', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
      expect(r.error.message).toContain('could not install not-in-wheelhouse==9.9');
    }
  });

  it('prepares an environment ahead of its calls (runners.e2b.environment with prepare), then calls find it ready', async () => {
    const first = await executeReady(org, 'uses_wheel');
    const pip = [{ name: 'tpe2b', version: '>=1.0' }];
    const ask = (prepare: boolean) =>
      client.req('toolplane.internal.v1.runners.e2b.environment', {
        org_id: org,
        tool_id: 'tool-00000000-0000-4000-8000-000000000000', // the environment is the requirements', not one tool's
        source_type: 'python',
        pip_requirements: pip,
        provider_credentials: { E2B_API_KEY: KEY },
        sandbox_config_fingerprint: first.sandbox_config_fingerprint,
        prepare,
      });
    expect(await ask(false)).toMatchObject({
      provider: 'e2b',
      status: 'none',
      requirements_hash: expect.stringMatching(/^[0-9a-f]{20}$/),
    });
    expect((await ask(true)).status).toBe('building');
    await until(async () => expect((await ask(false)).status).toBe('ready'));
    const created = fake.stats().creates;
    await register(org, pythonTool('prepared', 'import tpe2b\nreturn tpe2b.VALUE'), {
      metadata_: { sandbox: 'e2b' },
      pip_requirements: pip,
    });
    expect(await execute(org, 'prepared')).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: 'from-e2b-wheel',
    });
    expect(fake.stats().creates).toBe(created);
  });

  it('runs async, raising, timed-out, loud and TypeScript tools like runner-local, all in one reused sandbox', async () => {
    await register(
      org,
      'async def waits():\n    """Waits a little."""\n    import asyncio\n    await asyncio.sleep(0.01)\n    return "awaited"\n',
    );
    await register(org, pythonTool('boom', 'raise ValueError("bad input")'));
    await register(org, pythonTool('sleepy', 'import time\ntime.sleep(30)\nreturn 1'));
    await register(org, pythonTool('loud', 'print("x" * 20000)\nreturn "done"'));
    await register(
      org,
      '/**\n * Add.\n * @param a first\n * @param b second\n */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n',
      { source_type: 'typescript', metadata_: { sandbox: 'e2b' } },
    );
    expect(await executeReady(org, 'waits')).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: 'awaited',
    });
    const created = fake.stats().creates;
    const boom = await execute(org, 'boom');
    expect(boom).toMatchObject({
      status: 'error',
      provider: 'e2b',
      func_return: 'Error executing function boom: ValueError: bad input',
      error: { code: 'TOOL_EXCEPTION', message: 'bad input' },
    });
    expect(boom.stderr.join('')).toMatch(/Traceback[\s\S]*ValueError: bad input/);
    const slow = await execute(org, 'sleepy', { timeout_ms: 1500 });
    expect(slow).toMatchObject({
      status: 'error',
      provider: 'e2b',
      error: { code: 'EXECUTION_TIMEOUT', message: 'Function sleepy timed out after 1500 ms' },
    });
    const loud = await execute(org, 'loud');
    expect(loud).toMatchObject({ status: 'success', func_return: 'done' });
    expect(loud.stdout.join('')).toContain('[... output truncated: only the first 4096 bytes are kept]');
    expect(loud.stdout.join('').length).toBeLessThan(5000);
    expect(await execute(org, 'add', { args: { a: 2, b: 3 } })).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: 5,
    });
    // Five calls after the first, no new sandbox: the timed-out call left nothing behind either.
    expect(fake.stats().creates).toBe(created);
    expect(sandboxesOf(org).filter((s) => s.metadata['toolplane-requirements'] === 'none')).toHaveLength(1);
    expect(await metrics()).toMatch(/^toolplane_e2b_sandbox_reuses_total [1-9]/m);
  });

  it("a call's leftovers never reach the next call: files, a background process, edits of the harness; the sandbox is replaced", async () => {
    const o = uniqueOrg('attack');
    await setKey(o, keyOf());
    await register(
      o,
      pythonTool(
        'attack',
        `import os, subprocess
wrote, edited = [], 0
for p, text in (("/home/user/evil.txt", "left behind"), ("/tmp/evil.txt", "left behind"), ("/home/user/.profile", "export EVIL=1\\n")):
    try:
        open(p, "a").write(text)
        wrote.append(p)
    except OSError:
        pass
for root, _, files in os.walk("/home/user/.toolplane"):
    for f in files:
        if f.endswith(".py"):
            try:
                open(os.path.join(root, f), "a").write("\\nprint('PWNED')\\n")
                edited += 1
            except OSError:
                pass
subprocess.Popen(["sleep", "1000"], start_new_session=True)
os.environ["EVIL"] = "1"
return {"wrote": wrote, "edited": edited}`,
      ),
    );
    await register(
      o,
      pythonTool(
        'victim',
        `import os
procs = []
for pid in os.listdir("/proc"):
    try:
        procs.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
    except OSError:
        pass
pwned = False
marker = "PWN" + "ED"  # not in this source (its job file is under .toolplane too)
for root, _, files in os.walk("/home/user/.toolplane"):
    for f in files:
        try:
            pwned = pwned or marker in open(os.path.join(root, f)).read()
        except OSError:
            pass
return {"files": [p for p in ("/home/user/evil.txt", "/tmp/evil.txt") if os.path.exists(p)], "sleepers": [p for p in procs if "sleep 1000" in p], "evil_env": "EVIL" in os.environ, "pwned": pwned}`,
      ),
    );
    const created = fake.stats().creates;
    // In the fake every command runs as one uid: the attack lands (on E2B, as root, the tool's own uid could not even write these).
    const attack = await executeReady(o, 'attack');
    expect(attack).toMatchObject({ status: 'success', provider: 'e2b' });
    expect(attack.func_return.wrote).toEqual(expect.arrayContaining(['/tmp/evil.txt', '/home/user/.profile']));
    expect(attack.func_return.edited).toBeGreaterThan(0);
    // The sandbox could not prove itself clean: killed at once, never reused.
    await until(() => expect(sandboxesOf(o)).toEqual([]));
    expect(await metrics()).toMatch(/^toolplane_e2b_sandbox_kills_total\{reason="dirty"\} [1-9]/m);
    const v = await executeReady(o, 'victim');
    expect(v).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: { files: [], sleepers: [], evil_env: false, pwned: false },
    });
    expect(v.stdout.join('')).not.toContain('PWNED');
    expect(fake.stats().creates).toBe(created + 2);
  });

  it('runs up to calls_per_sandbox calls at once in one sandbox, and proves it clean before it takes more', async () => {
    const o = uniqueOrg('lanes');
    await setKey(o, keyOf());
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: o, provider: 'e2b', config: { calls_per_sandbox: 2 } });
    await register(o, pythonTool('nap', 'import time\ntime.sleep(1)\nreturn "rested"'));
    expect(await executeReady(o, 'nap')).toMatchObject({ status: 'success', provider: 'e2b' });
    const created = fake.stats().creates;
    const both = await Promise.all([execute(o, 'nap'), execute(o, 'nap')]);
    expect(both.map((r) => r.func_return)).toEqual(['rested', 'rested']);
    expect(await executeReady(o, 'nap')).toMatchObject({ status: 'success', func_return: 'rested' });
    expect(fake.stats().creates).toBe(created);
    expect(sandboxesOf(o)).toHaveLength(1);
  });

  it("a change of the org's e2b sandbox config makes a new sandbox and kills the old one", async () => {
    const o = uniqueOrg('cfg');
    await setKey(o, keyOf());
    await register(o, pythonTool('ping', 'return "pong"'));
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'e2b' });
    const [old] = sandboxesOf(o);
    const created = fake.stats().creates;
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: o, provider: 'e2b', config: { timeout_ms: 20_000 } });
    const r = await executeReady(o, 'ping');
    expect(r).toMatchObject({ status: 'success', provider: 'e2b' });
    expect(fake.stats().creates).toBe(created + 1);
    await until(() => expect(fake.stats().sandboxes.map((s) => s.sandboxId)).not.toContain(old!.sandboxId));
    expect(sandboxesOf(o).map((s) => s.metadata['toolplane-fingerprint'])).toEqual([r.sandbox_config_fingerprint]);
  });

  it('answers each E2B failure with its typed error: 401, 429, 5xx before the tool started; a sandbox lost mid-call', async () => {
    const o = uniqueOrg('faults');
    await setKey(o, keyOf());
    await register(o, pythonTool('ping', 'return "pong"'));
    for (const [status, code] of [
      [401, 'PROVIDER_AUTH_FAILED'],
      [429, 'PROVIDER_RATE_LIMITED'],
      [500, 'PROVIDER_UNAVAILABLE'],
      [503, 'PROVIDER_UNAVAILABLE'],
    ] as const) {
      fake.failNext('create', status);
      const r = await execute(o, 'ping');
      expect([status, r.status, r.error?.code]).toEqual([status, undefined, code]);
      expect(JSON.stringify(r)).not.toMatch(/e2b_[0-9a-f]{24}/);
    }
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'e2b' });
    const created = fake.stats().creates;
    fake.killSandboxDuringNextCommand();
    const lost = await execute(o, 'ping');
    expect(lost).toMatchObject({ status: 'error', provider: 'e2b', error: { code: 'SANDBOX_LOST' } });
    // The next call works, in a new sandbox.
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'e2b', func_return: 'pong' });
    expect(fake.stats().creates).toBe(created + 1);
    // A stream that breaks mid-call: nothing can be proven about the sandbox any more.
    fake.dropNextStream();
    expect(await execute(o, 'ping')).toMatchObject({ status: 'error', error: { code: 'SANDBOX_LOST' } });
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'e2b', func_return: 'pong' });
    expect(fake.stats().creates).toBe(created + 2);
  });

  it('falls back to local when the org lists it, and only then; names the provider that failed', async () => {
    const withFallback = uniqueOrg('fb');
    const without = uniqueOrg('nofb');
    for (const o of [withFallback, without]) {
      await setKey(o, keyOf());
      await register(o, pythonTool('where', 'return "ran"'), {});
    }
    await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: withFallback,
      provider: 'e2b',
      config: { default: true, fallback_providers: ['local'] },
    });
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: without, provider: 'e2b', config: { default: true } });
    fake.failNext('create', 503);
    const moved = await execute(withFallback, 'where');
    expect(moved).toMatchObject({
      status: 'success',
      provider: 'local',
      func_return: 'ran',
      fallback_from: 'e2b',
      fallback_error: { code: 'PROVIDER_UNAVAILABLE' },
    });
    fake.failNext('create', 503);
    expect((await execute(without, 'where')).error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
    expect(await executeReady(without, 'where')).toMatchObject({ status: 'success', provider: 'e2b' });
  });

  it("#3084: an org without an e2b config runs on local, and nothing of another org's E2B setup is used for it", async () => {
    const a = uniqueOrg('has-e2b');
    const b = uniqueOrg('no-e2b');
    await setKey(a, keyOf());
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: a, provider: 'e2b', config: { default: true } });
    for (const o of [a, b]) await register(o, pythonTool('custom', 'return "custom"'), {});
    expect(await executeReady(a, 'custom')).toMatchObject({ status: 'success', provider: 'e2b' });
    const r = await execute(b, 'custom');
    expect(r).toMatchObject({ status: 'success', provider: 'local', func_return: 'custom' });
    expect(r.fallback_from).toBeUndefined();
    // Org B asking for e2b itself has no key: refused, never served with org A's key or sandbox.
    await register(b, pythonTool('wants_e2b', 'return 1'));
    expect((await execute(b, 'wants_e2b')).error).toMatchObject({ code: 'PROVIDER_AUTH_FAILED' });
    expect(sandboxesOf(b)).toEqual([]);
  });

  it('finds its sandboxes again after a restart (no new create), and answers ENVIRONMENT_BUILDING while one is made', async () => {
    const created = fake.stats().creates;
    await stack.stopApp('runner-e2b');
    const env = { ...stackOpts.appEnv!['runner-e2b']!, E2B_BUILD_WAIT_MS: '1' };
    stack.apps.set(
      'runner-e2b',
      await startApp('runner-e2b', { ...stackOpts, appEnv: { ...stackOpts.appEnv, 'runner-e2b': env } }),
    );
    expect(await executeReady(org, 'waits')).toMatchObject({
      status: 'success',
      provider: 'e2b',
      func_return: 'awaited',
    });
    expect(fake.stats().creates).toBe(created);
    expect(fake.stats().connects).toBeGreaterThan(0);
    expect(await metrics()).toMatch(/^toolplane_e2b_sandbox_adopted_total [1-9]/m);

    const o = uniqueOrg('slow');
    await setKey(o, keyOf());
    await register(o, pythonTool('ping', 'return "pong"'));
    fake.setCreateLatencyMs(1500);
    try {
      const building = await execute(o, 'ping');
      expect(building.error).toMatchObject({
        code: 'ENVIRONMENT_BUILDING',
        retryable: true,
        details: { provider: 'e2b', status: 'building' },
      });
      expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'e2b', func_return: 'pong' });
    } finally {
      fake.setCreateLatencyMs(0);
    }
  });
});
