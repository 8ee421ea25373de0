import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';

/**
 * Provider choice through the public API, on the shared stack (runner-local only: runner-e2b and
 * runner-modal exist but are not part of it). A tool's `metadata_.sandbox` wins, else the org's
 * default config, else local; a fallback is taken only along the org's own list, only for errors
 * that prove the tool did not start, and the result says so.
 */
describe('provider choice and fallback', () => {
  let client: RawClient;

  const ok = async (subject: string, body: Record<string, unknown>) => {
    const r = await client.req(subject, body, { timeoutMs: 30_000 });
    if (r.error && r.status === undefined) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r;
  };
  const register = (org: string, name: string, body: string, metadata_?: Record<string, unknown>) =>
    ok('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: pythonTool(name, body), ...(metadata_ ? { metadata_ } : {}) },
    });
  const configure = (org: string, provider: string, config: Record<string, unknown>) =>
    ok('toolplane.v1.sandbox-configs.upsert', { org_id: org, provider, config });
  const execute = (org: string, tool_name: string) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, tool_name, args: {} }, { timeoutMs: 30_000 });
  // Values come back reversed: secrets are masked in a tool's output, and this reads which ones it got.
  const ENV_PROBE =
    'import os\nreturn {k: os.environ[k][::-1] if k in os.environ else None for k in ("E2B_API_KEY", "SHARED", "ONLY_E2B", "ONLY_LOCAL")}';

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  it('runs on local without a choice, and refuses a provider name that is not one', async () => {
    const org = uniqueOrg('prov');
    await register(org, 'plain', 'return "here"');
    await register(org, 'odd', 'return "never"', { sandbox: 'gpu-cluster' });
    const plain = await execute(org, 'plain');
    expect(plain).toMatchObject({ status: 'success', func_return: 'here', provider: 'local' });
    expect(plain.fallback_from).toBeUndefined();
    const odd = await execute(org, 'odd');
    expect(odd.error).toMatchObject({ code: 'UNSUPPORTED_TOOL', retryable: false });
    expect(odd.error.message).toMatch(/metadata_\.sandbox/);
  });

  it('a provider that cannot take the call is an error, not a silent move, when the org has no fallback', async () => {
    const org = uniqueOrg('prov');
    await register(org, 'on_modal', 'return "ran"', { sandbox: 'modal' });
    await register(org, 'on_e2b', 'return "ran"', { sandbox: 'e2b' });
    // No runner-modal nor runner-e2b serves this stack: nobody answers their subjects.
    const modal = await execute(org, 'on_modal');
    expect(modal.error).toMatchObject({ code: 'RUNNER_UNAVAILABLE', retryable: true });
    expect(modal.status).toBeUndefined();
    const e2b = await execute(org, 'on_e2b');
    expect(e2b.error).toMatchObject({ code: 'RUNNER_UNAVAILABLE', retryable: true });
  });

  it("falls back along the org's list and names the provider that failed", async () => {
    const org = uniqueOrg('prov');
    await register(org, 'on_modal', 'return "ran"', { sandbox: 'modal' });
    await configure(org, 'modal', { fallback_providers: ['e2b', 'local'] });
    const r = await execute(org, 'on_modal');
    expect(r).toMatchObject({ status: 'success', func_return: 'ran', provider: 'local', fallback_from: 'modal' });
    expect(r.fallback_error).toMatchObject({ code: 'RUNNER_UNAVAILABLE' });
  });

  it("the org's default provider runs the tools that name none; marking another default clears it", async () => {
    const org = uniqueOrg('prov');
    await register(org, 'plain', 'return "here"');
    await configure(org, 'e2b', { default: true, fallback_providers: ['local'] });
    const moved = await execute(org, 'plain');
    expect(moved).toMatchObject({ status: 'success', provider: 'local', fallback_from: 'e2b' });
    expect(moved.fallback_error.code).toBe('RUNNER_UNAVAILABLE');

    await configure(org, 'local', { default: true });
    const { sandbox_configs } = await ok('toolplane.v1.sandbox-configs.list', { org_id: org });
    expect(
      Object.fromEntries(
        sandbox_configs.map((c: { provider: string; config: { default?: boolean } }) => [
          c.provider,
          c.config.default ?? false,
        ]),
      ),
    ).toEqual({ e2b: false, local: true });
    // CredentialsChanged ends every cached choice at once: the next call already sees the new default.
    const back = await execute(org, 'plain');
    expect(back).toMatchObject({ status: 'success', provider: 'local' });
    expect(back.fallback_from).toBeUndefined();
  });

  it("another org's default never moves this org's tools (letta #3084)", async () => {
    const a = uniqueOrg('prov-a');
    const b = uniqueOrg('prov-b');
    await configure(a, 'e2b', { default: true });
    await ok('toolplane.v1.secrets.set', {
      org_id: a,
      scope: 'sandbox',
      provider: 'e2b',
      key: 'E2B_API_KEY',
      value: 'e2b_key_of_org_a_0123456789',
    });
    await register(a, 'plain', 'return "a"');
    await register(b, 'plain', 'return "b"');
    expect((await execute(a, 'plain')).error).toMatchObject({ code: 'RUNNER_UNAVAILABLE' });
    expect(await execute(b, 'plain')).toMatchObject({ status: 'success', func_return: 'b', provider: 'local' });
  });

  it('resolves the env for the provider that runs: a fallback gets its own env, never the failed provider’s credentials', async () => {
    const org = uniqueOrg('prov');
    await register(org, 'probe', ENV_PROBE, { sandbox: 'e2b' });
    await configure(org, 'e2b', { fallback_providers: ['local'] });
    const secret = (provider: string | undefined, key: string, value: string) =>
      ok('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', ...(provider ? { provider } : {}), key, value });
    await secret('e2b', 'E2B_API_KEY', 'e2b_key_never_in_a_tool_0123456789');
    await secret('e2b', 'ONLY_E2B', 'e2b-only');
    await secret('local', 'ONLY_LOCAL', 'local-only');
    await secret(undefined, 'SHARED', 'everyone');
    const r = await execute(org, 'probe');
    expect(r).toMatchObject({ status: 'success', provider: 'local', fallback_from: 'e2b' });
    expect(r.func_return).toEqual({ E2B_API_KEY: null, SHARED: 'enoyreve', ONLY_E2B: null, ONLY_LOCAL: 'ylno-lacol' });
    expect(JSON.stringify(r)).not.toContain('e2b_key_never_in_a_tool');
  });

  it('a sandbox config refuses a fallback list naming a provider twice', async () => {
    const org = uniqueOrg('prov');
    const r = await client.req('toolplane.v1.sandbox-configs.upsert', {
      org_id: org,
      provider: 'e2b',
      config: { fallback_providers: ['local', 'local'] },
    });
    expect(r.error).toMatchObject({ code: 'CONTRACT_VIOLATION' });
  });
});
