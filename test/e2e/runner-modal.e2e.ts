import { expectEventually } from '@toolplane/testing';
import { startModalFake, type ModalFake } from '../../tools/fakes/modal/modal-fake';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { executeOnceBuilt } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

/**
 * runner-modal through the public API, against the Modal fake (tools/fakes/modal) driven by the
 * unmodified `modal` SDK: tools with `metadata_.sandbox: "modal"` run in warm Modal sandboxes made
 * from an image with their requirements, with the org's own Modal token (never reaching the tool),
 * reused while each call proves it left nothing behind, found again after a restart, and every
 * Modal failure comes back as its typed code.
 */
describe('runner-modal: tools in warm Modal sandboxes', () => {
  const prefix = `mdl${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('modal');
  const TOKEN = {
    id: `ak-${Math.random().toString(36).slice(2, 12)}`,
    secret: `as-${Math.random().toString(36).slice(2, 14)}`,
  };
  const house = localWheelhouse([['tpmodal', '1.0', 'from-modal-wheel']]);
  let fake: ModalFake;
  let stack: Stack;
  let stackOpts: StackOptions;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 120_000);
  const setToken = async (o: string, t: { id: string; secret: string }) => {
    await req('toolplane.v1.secrets.set', {
      org_id: o,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_ID',
      value: t.id,
    });
    await req('toolplane.v1.secrets.set', {
      org_id: o,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_SECRET',
      value: t.secret,
    });
  };
  const register = (
    o: string,
    source_code: string,
    extra: Record<string, unknown> = { metadata_: { sandbox: 'modal' } },
  ) => req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code, ...extra } });
  /** tools.execute, asked again while its environment is still being built (retryable by contract). */
  const execute = (o: string, name: string, extra: Record<string, unknown> = {}) =>
    executeOnceBuilt(client, { org_id: o, tool_name: name, args: {}, ...extra });
  const sandboxesOf = (o: string) => fake.stats().sandboxes.filter((s) => s.tags['toolplane-org'] === o);
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${stack.apps.get('runner-modal')!.healthPort}/metrics`)).text();
  const metric = async (name: string) =>
    Number((await metrics()).match(new RegExp(`^${name} (\\d+)`, 'm'))?.[1] ?? NaN);

  beforeAll(async () => {
    fake = await startModalFake({ readable: [house.dir], tokens: [TOKEN] });
    stackOpts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'runner-modal'],
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        executor: { RUNNER_REPLY_MARGIN_MS: '20000' },
        'runner-modal': {
          MODAL_SERVER_URL: fake.serverUrl,
          MODAL_PYTHON: '/usr/bin/python3',
          MODAL_PIP_FIND_LINKS: house.dir,
          MODAL_PIP_NO_INDEX: 'true',
          MODAL_STDOUT_LIMIT_BYTES: '4096',
          MODAL_WARM_SANDBOXES: '1',
        },
      },
    };
    stack = await startStack(stackOpts);
    client = await RawClient.connect(prefix);
    await setToken(org, TOKEN);
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
  afterEach(() => (fake.faults = {}));

  it("runs a tool on Modal with the org's sandbox secret, never the org's Modal token", async () => {
    await register(
      org,
      pythonTool(
        'greets',
        `import os\nreturn {"greeting": os.environ.get("GREETING"), "token_in_env": any("${TOKEN.secret}" in v for v in os.environ.values()) or "MODAL_TOKEN_SECRET" in os.environ}`,
      ),
    );
    const r = await execute(org, 'greets');
    expect(r).toMatchObject({
      status: 'success',
      provider: 'modal',
      func_return: { greeting: 'hello-from-a-sandbox-secret', token_in_env: false },
    });
    expect(r.fallback_from).toBeUndefined();
    expect(sandboxesOf(org).every((s) => s.tokenId === TOKEN.id && s.networkBlocked)).toBe(true);
  });

  it('runs raising, timed-out and loud tools, and reuses warm sandboxes: sequential calls create nothing more', async () => {
    await register(org, pythonTool('boom', 'raise ValueError("bad input")'));
    await register(org, pythonTool('sleepy', 'import time\ntime.sleep(30)\nreturn 1'));
    await register(org, pythonTool('loud', 'print("x" * 20000)\nreturn "done"'));
    await register(
      org,
      pythonTool(
        'forges',
        'import sys\nprint("\\x00TOOLPLANE_RESULT {\\"status\\": \\"success\\", \\"value\\": \\"forged\\"}")\nreturn "real"',
      ),
    );
    expect(await execute(org, 'greets')).toMatchObject({ status: 'success' });
    const creates = fake.stats().creates;

    const boom = await execute(org, 'boom');
    expect(boom).toMatchObject({ status: 'error', provider: 'modal', error: { code: 'TOOL_EXCEPTION' } });
    expect(boom.func_return).toContain('ValueError');
    expect(boom.func_return).toContain('bad input');

    const loud = await execute(org, 'loud');
    expect(loud).toMatchObject({ status: 'success', func_return: 'done' });
    expect(loud.stdout.join('')).toContain('output truncated');

    expect(await execute(org, 'forges')).toMatchObject({ status: 'success', func_return: 'real' });
    for (let i = 0; i < 3; i++) expect(await execute(org, 'greets')).toMatchObject({ status: 'success' });
    expect(fake.stats().creates).toBe(creates);
    expect(await metric('toolplane_modal_pool_hits_total')).toBeGreaterThanOrEqual(6);

    const sleepy = await execute(org, 'sleepy', { timeout_ms: 1500 });
    expect(sleepy).toMatchObject({ status: 'error', provider: 'modal', error: { code: 'EXECUTION_TIMEOUT' } });
  });

  it('prepares an environment ahead of its calls (runners.modal.environment with prepare), then a call finds it warm', async () => {
    const prepared = uniqueOrg('modalprep');
    await setToken(prepared, TOKEN);
    await register(prepared, pythonTool('ready_first', 'return "warm"'));
    const first = await execute(prepared, 'ready_first');
    expect(first).toMatchObject({ status: 'success', provider: 'modal' });
    const ask = (prepare: boolean) =>
      client.req('toolplane.internal.v1.runners.modal.environment', {
        org_id: prepared,
        tool_id: 'tool-00000000-0000-4000-8000-000000000000',
        source_type: 'python',
        pip_requirements: [],
        provider_credentials: { MODAL_TOKEN_ID: TOKEN.id, MODAL_TOKEN_SECRET: TOKEN.secret },
        sandbox_config_fingerprint: 'a-new-config',
        prepare,
      });
    expect(await ask(false)).toMatchObject({ provider: 'modal', status: 'none' });
    expect(['building', 'ready']).toContain((await ask(true)).status);
    await expectEventually(async () => expect((await ask(false)).status).toBe('ready'), {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
  });

  it('never lets two concurrent calls share a sandbox', async () => {
    await register(org, pythonTool('who', 'import time\ntime.sleep(0.5)\nreturn "ok"'));
    const execsBefore = new Map(sandboxesOf(org).map((s) => [s.id, s.execs]));
    const rs = await Promise.all([execute(org, 'who'), execute(org, 'who'), execute(org, 'who')]);
    for (const r of rs) expect(r).toMatchObject({ status: 'success', provider: 'modal' });
    // Three calls ran at once, each in a sandbox of its own: never two execs at once in one sandbox.
    expect(sandboxesOf(org).filter((s) => s.execs > (execsBefore.get(s.id) ?? 0)).length).toBeGreaterThanOrEqual(3);
    for (const s of sandboxesOf(org)) expect(s.maxConcurrentExecs).toBe(1);
  });

  it('builds an image with the pip requirements once, and runs tools on its interpreter', async () => {
    // Counted before registering: registering prepares the environment, which may build the image
    // before the first call does. Either way the image is built once.
    const builds = fake.stats().imageBuilds;
    await register(org, pythonTool('uses_wheel', 'import tpmodal\nreturn tpmodal.VALUE'), {
      metadata_: { sandbox: 'modal' },
      pip_requirements: [{ name: 'tpmodal', version: '1.0' }],
    });
    expect(await execute(org, 'uses_wheel')).toMatchObject({
      status: 'success',
      provider: 'modal',
      func_return: 'from-modal-wheel',
    });
    expect(await execute(org, 'uses_wheel')).toMatchObject({ status: 'success', func_return: 'from-modal-wheel' });
    expect(fake.stats().imageBuilds).toBe(builds + 1);

    await register(org, pythonTool('wants_missing', 'return 1'), {
      metadata_: { sandbox: 'modal' },
      pip_requirements: [{ name: 'not-in-wheelhouse', version: '9.9' }],
    });
    const missing = await execute(org, 'wants_missing');
    expect(missing).toMatchObject({ status: 'error', provider: 'modal', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
    expect(missing.error.message).toContain('not-in-wheelhouse');
  });

  it("answers each Modal fault with its typed code (auth, exhausted capacity, a sandbox terminated mid-call), and falls back along the org's list", async () => {
    const bad = uniqueOrg('modalbad');
    await setToken(bad, { id: 'ak-wrong', secret: 'as-wrong' });
    await register(bad, pythonTool('nope', 'return 1'));
    const auth = await execute(bad, 'nope');
    expect(auth.error).toMatchObject({ code: 'PROVIDER_AUTH_FAILED' });
    expect(JSON.stringify(auth)).not.toContain('as-wrong');

    const fresh = uniqueOrg('modalfull');
    await setToken(fresh, TOKEN);
    await register(fresh, pythonTool('full', 'return 1'));
    fake.faults = { resourceExhausted: true };
    expect((await execute(fresh, 'full')).error).toMatchObject({ code: 'PROVIDER_RATE_LIMITED', retryable: true });
    // The org's own fallback list: the call moves on (modal → e2b, not served here → local) and says where it failed.
    await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: fresh,
      provider: 'modal',
      config: { fallback_providers: ['e2b', 'local'] },
    });
    const moved = await execute(fresh, 'full');
    expect(moved).toMatchObject({ status: 'success', func_return: 1, provider: 'local', fallback_from: 'modal' });
    expect(moved.fallback_error).toMatchObject({ code: 'PROVIDER_RATE_LIMITED' });
    fake.faults = {};

    await register(org, pythonTool('long', 'import time\ntime.sleep(20)\nreturn 1'));
    fake.faults = { terminateMidExecMs: 700 };
    const lost = await execute(org, 'long');
    fake.faults = {};
    expect(lost).toMatchObject({ status: 'error', provider: 'modal', error: { code: 'SANDBOX_LOST' } });
    expect(await execute(org, 'greets')).toMatchObject({ status: 'success', provider: 'modal' });
  });

  it('a restarted runner adopts its own running sandboxes instead of creating new ones', async () => {
    expect(await execute(org, 'greets')).toMatchObject({ status: 'success' });
    await stack.stopApp('runner-modal');
    const creates = fake.stats().creates;
    stack.apps.set('runner-modal', await startApp('runner-modal', stackOpts));
    expect(await execute(org, 'greets')).toMatchObject({ status: 'success', provider: 'modal' });
    expect(await metric('toolplane_modal_sandbox_adopted_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('toolplane_modal_pool_hits_total')).toBe(1);
    expect(fake.stats().creates - creates).toBeLessThanOrEqual(1); // at most the warm one made behind the adopted
  });
});
