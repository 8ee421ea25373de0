import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, stopProcess, type RunningApp, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { WebhookServer, json } from '../support/webhook-server';

const SIGNING = 'whsec-e2e-freshness-0001';
// Returns each variable reversed, so values can be read past the masking.
const ENV_REV = pythonTool(
  'env_rev',
  'import os\nreturn {n: (os.environ.get(n) or "")[::-1] for n in names.split(",")}',
  'names: str',
);
const rev = (s: string) => [...s].reverse().join('');

/**
 * Executors reuse env replies and credentials replicas cache stored state: every write of
 * secrets, sandbox configs and webhooks must still reach the very next execution, whichever
 * executor and credentials replica serve it. Two replicas of each, caches warmed before each
 * change, then several executions (spread over the replicas by the queue groups) right after it.
 */
describe('credential changes reach the very next execution on every replica', () => {
  const hooks = new WebhookServer(SIGNING);
  let stack: Stack;
  const extra: RunningApp[] = [];
  let client: RawClient;
  const prefix = `${testPrefix()}fr`;
  const org = uniqueOrg('fresh');

  const req = async (subject: string, body: Record<string, unknown>) => {
    const r = await client.req(subject, body, { timeoutMs: 20_000 });
    if (r.error) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r;
  };
  const execute = (names: string, more: Record<string, unknown> = {}) =>
    req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'env_rev', args: { names }, ...more });
  /** Enough calls that both executors and both credentials replicas serve some (queue groups pick at random). */
  const everyReplica = async (names: string, more: Record<string, unknown> = {}) =>
    Promise.all(Array.from({ length: 8 }, () => execute(names, more)));

  beforeAll(async () => {
    await hooks.start();
    const opts = { prefix, databaseUrl: testDatabaseUrl(), env: { LOG_LEVEL: 'warn' } };
    stack = await startStack(opts);
    extra.push(await startApp('executor', opts), await startApp('credentials', opts));
    client = await RawClient.connect(prefix);
    await req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ENV_REV } });
  });
  afterAll(async () => {
    await client?.close();
    await Promise.all(extra.map((a) => stopProcess(a.proc)));
    await stack?.stop();
    await hooks.stop();
  });

  it('sees each new value, and a deleted secret is gone, for sandbox and agent secrets', async () => {
    for (let i = 0; i < 4; i++) {
      await everyReplica('TOKEN'); // warm every cache with the current state
      await req('toolplane.v1.secrets.set', {
        org_id: org,
        scope: 'sandbox',
        key: 'TOKEN',
        value: `sandbox-token-v${i}`,
      });
      for (const r of await everyReplica('TOKEN')) expect(r.func_return.TOKEN).toBe(rev(`sandbox-token-v${i}`));
    }
    await everyReplica('TOKEN', { agent_id: 'agent-f' });
    await req('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'agent',
      agent_id: 'agent-f',
      key: 'TOKEN',
      value: 'agent-token-value',
    });
    for (const r of await everyReplica('TOKEN', { agent_id: 'agent-f' }))
      expect(r.func_return.TOKEN).toBe(rev('agent-token-value'));
    await req('toolplane.v1.secrets.delete', { org_id: org, scope: 'agent', agent_id: 'agent-f', key: 'TOKEN' });
    for (const r of await everyReplica('TOKEN', { agent_id: 'agent-f' }))
      expect(r.func_return.TOKEN).toBe(rev('sandbox-token-v3'));
    await req('toolplane.v1.secrets.delete', { org_id: org, scope: 'sandbox', key: 'TOKEN' });
    for (const r of await everyReplica('TOKEN')) expect(r.func_return.TOKEN).toBe('');
  });

  it('applies a sandbox config upsert to the next execution', async () => {
    const before = new Set((await everyReplica('X')).map((r) => r.sandbox_config_fingerprint));
    expect(before.size).toBe(1);
    const { sandbox_config } = await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: org,
      provider: 'local',
      config: { timeout_ms: 20_000, memory_mb: 256 },
    });
    for (const r of await everyReplica('X')) expect(r.sandbox_config_fingerprint).toBe(sandbox_config.fingerprint);
    const { sandbox_config: again } = await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: org,
      provider: 'local',
      config: { timeout_ms: 20_000, memory_mb: 384 },
    });
    expect(again.fingerprint).not.toBe(sandbox_config.fingerprint);
    for (const r of await everyReplica('X')) expect(r.sandbox_config_fingerprint).toBe(again.fingerprint);
  });

  it('asks a webhook set after cached executions, and stops asking once it is deleted', async () => {
    await req('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      key: 'HOOKED',
      value: 'stored-hooked-value',
    });
    for (const r of await everyReplica('HOOKED')) expect(r.func_return.HOOKED).toBe(rev('stored-hooked-value'));
    const url = hooks.route('/fresh', (_h, res) => json(res, 200, { env: { HOOKED: 'webhook-hooked-value' } }));
    await req('toolplane.v1.webhooks.set', { org_id: org, url, signing_secret: SIGNING });
    for (const r of await everyReplica('HOOKED')) expect(r.func_return.HOOKED).toBe(rev('webhook-hooked-value'));
    expect(hooks.hitsOf('/fresh')).toBe(8); // asked per call: never a reused reply
    await req('toolplane.v1.webhooks.delete', { org_id: org });
    for (const r of await everyReplica('HOOKED')) expect(r.func_return.HOOKED).toBe(rev('stored-hooked-value'));
    expect(hooks.hitsOf('/fresh')).toBe(8);
  });
});
