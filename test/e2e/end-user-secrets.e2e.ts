/**
 * An end user's own secrets (`scope: "user"`): a call made for a user (`user_id`) gets them over
 * the agent's and the org's (one precedence, in credentials' env resolution), on sync, batch, async
 * and approved calls; no other user's call, no call without a user and no other org ever sees
 * them, however warm the caches; the credentials webhook is told the user and caches per user;
 * secrets are listed and deleted per user. Shared stack; a tool that returns its env reversed (so
 * values can be read past the masking).
 */
import { testPrefix, uniqueOrg } from '../support/context';
import { recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';
import { WebhookServer, json } from '../support/webhook-server';

const SIGNING = 'whsec-e2e-end-user-secrets-01';
const ENV_REV = pythonTool(
  'env_rev',
  'import os\nreturn {n: (os.environ.get(n) or "")[::-1] for n in names.split(",")}',
  'names: str',
);
const rev = (s: string) => [...s].reverse().join('');

describe("an end user's secrets (scope user): user over agent over org, never another user's", () => {
  const hooks = new WebhookServer(SIGNING);
  let client: RawClient;
  const org = uniqueOrg('usersec');
  const other = uniqueOrg('usersec-other');

  const call = (subject: string, body: Record<string, unknown>, o = org) =>
    client.call(subject, { org_id: o, ...body }, 30_000);
  const secret = (body: Record<string, unknown>, o = org) => call('toolplane.v1.secrets.set', body, o);
  /** The named variables as the tool saw them ('' when unset). */
  const envOf = async (
    names: string,
    extra: Record<string, unknown> = {},
    o = org,
  ): Promise<Record<string, string>> => {
    const r = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: o, tool_name: 'env_rev', args: { names }, ...extra },
      { timeoutMs: 30_000 },
    );
    expect([r.error, r.status]).toEqual([undefined, 'success']);
    return Object.fromEntries(Object.entries(r.func_return as Record<string, string>).map(([k, v]) => [k, rev(v)]));
  };

  beforeAll(async () => {
    await hooks.start();
    client = await RawClient.connect(testPrefix());
    for (const o of [org, other]) await call('toolplane.v1.tools.upsert', { tool: { source_code: ENV_REV } }, o);
    await call('toolplane.v1.tools.upsert', {
      tool: {
        source_code: pythonTool('env_held', 'import os\nreturn (os.environ.get("P_C") or "")[::-1]'),
        default_requires_approval: true,
      },
    });
    for (const k of ['A', 'B', 'C']) await secret({ scope: 'sandbox', key: `P_${k}`, value: `org-${k}-value` });
    for (const k of ['B', 'C'])
      await secret({ scope: 'agent', agent_id: 'agent-1', key: `P_${k}`, value: `agent-${k}-value` });
    await secret({ scope: 'user', user_id: 'alice', key: 'P_C', value: 'alice-C-value' });
    await secret({ scope: 'user', user_id: 'bob', key: 'P_C', value: 'bob-C-value' });
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await hooks.stop();
  });

  it('layers the org sandbox env < agent secrets < the user’s secrets, for each user on their own', async () => {
    expect(await envOf('P_A,P_B,P_C', { agent_id: 'agent-1', user_id: 'alice' })).toEqual({
      P_A: 'org-A-value',
      P_B: 'agent-B-value',
      P_C: 'alice-C-value',
    });
    expect(await envOf('P_A,P_B,P_C', { agent_id: 'agent-1', user_id: 'bob' })).toEqual({
      P_A: 'org-A-value',
      P_B: 'agent-B-value',
      P_C: 'bob-C-value',
    });
    expect(await envOf('P_A,P_B,P_C', { agent_id: 'agent-1' })).toEqual({
      P_A: 'org-A-value',
      P_B: 'agent-B-value',
      P_C: 'agent-C-value',
    });
    expect(await envOf('P_A,P_B,P_C', { user_id: 'alice' })).toEqual({
      P_A: 'org-A-value',
      P_B: 'org-B-value',
      P_C: 'alice-C-value',
    });
    // The caller's own env still wins over every stored value.
    expect(await envOf('P_C', { user_id: 'alice', env: { P_C: 'call-C-value' } })).toEqual({ P_C: 'call-C-value' });
  });

  it("never gives a user's secret to another user's call, a call without a user, or another org — caches warm", async () => {
    await secret({ scope: 'user', user_id: 'alice', key: 'ALICE_ONLY', value: 'alice-only-value' });
    // Warm every cache with alice's env first, then ask as everyone else, for the same tool and agent.
    for (let i = 0; i < 2; i++)
      expect((await envOf('ALICE_ONLY', { user_id: 'alice' })).ALICE_ONLY).toBe('alice-only-value');
    expect((await envOf('ALICE_ONLY', { user_id: 'bob' })).ALICE_ONLY).toBe('');
    expect((await envOf('ALICE_ONLY', {})).ALICE_ONLY).toBe('');
    expect((await envOf('ALICE_ONLY', { user_id: 'Alice' })).ALICE_ONLY).toBe('');
    expect(await envOf('ALICE_ONLY,P_C', { user_id: 'alice' }, other)).toEqual({ ALICE_ONLY: '', P_C: '' });
    const batch = await client.call(
      'toolplane.v1.tools.execute-batch',
      {
        org_id: org,
        user_id: 'bob',
        calls: [{ call_id: 'c1', tool_name: 'env_rev', args: { names: 'ALICE_ONLY,P_C' } }],
      },
      30_000,
    );
    expect(batch.results[0].func_return).toEqual({ ALICE_ONLY: '', P_C: rev('bob-C-value') });
  });

  it("resolves the user's secrets for batch, async and approved calls (rebuilt from the record)", async () => {
    const batch = await client.call(
      'toolplane.v1.tools.execute-batch',
      {
        org_id: org,
        user_id: 'alice',
        agent_id: 'agent-1',
        calls: [{ call_id: 'c1', tool_name: 'env_rev', args: { names: 'P_B,P_C' } }],
      },
      30_000,
    );
    expect(batch.results[0].func_return).toEqual({ P_B: rev('agent-B-value'), P_C: rev('alice-C-value') });

    const queued = await call('toolplane.v1.tools.execute', {
      tool_name: 'env_rev',
      args: { names: 'P_C' },
      user_id: 'bob',
      mode: 'async',
    });
    const done = await recordOf(
      client,
      org,
      queued.execution_id,
      (r) => r.execution.status === 'succeeded' || r.execution.status === 'failed',
      120_000,
    );
    expect(done.execution).toMatchObject({ status: 'succeeded', user_id: 'bob' });
    expect(done.result.func_return).toEqual({ P_C: rev('bob-C-value') });

    const held = await call('toolplane.v1.tools.execute', { tool_name: 'env_held', args: {}, user_id: 'alice' });
    expect(held.status).toBe('pending_approval');
    // Approved with an org token that names no user: the call still runs for alice.
    const approved = await call('toolplane.v1.executions.approve', { execution_id: held.execution_id });
    expect(approved).toMatchObject({ status: 'success', func_return: rev('alice-C-value') });
  });

  it('tells the webhook the user, and caches its answers per user (never one user’s for another)', async () => {
    const url = hooks.route('/per-user', (h, res) =>
      json(res, 200, { env: { HOOK: `hook-for-${h.body.user_id ?? 'nobody'}`, P_C: 'hook-C-value' } }),
    );
    await call('toolplane.v1.webhooks.set', { url, signing_secret: SIGNING, cache_ttl_ms: 60_000 });
    try {
      for (let i = 0; i < 2; i++)
        expect(await envOf('HOOK,P_C', { user_id: 'alice' })).toEqual({ HOOK: 'hook-for-alice', P_C: 'alice-C-value' });
      expect(await envOf('HOOK,P_C', { user_id: 'bob' })).toEqual({ HOOK: 'hook-for-bob', P_C: 'bob-C-value' });
      expect(await envOf('HOOK,P_C', {})).toEqual({ HOOK: 'hook-for-nobody', P_C: 'hook-C-value' });
      const sent = hooks.received.filter((h) => h.path === '/per-user');
      expect(sent.map((h) => h.body.user_id)).toEqual(['alice', 'bob', null]);
      expect(sent.every((h) => h.verified && h.body.organization_id === org)).toBe(true);
    } finally {
      await call('toolplane.v1.webhooks.delete', {});
    }
  });

  it("lists and deletes one user's secrets (metadata only), and keeps the scope rules", async () => {
    await secret({ scope: 'user', user_id: 'carol', key: 'CAROL_KEY', value: 'carol-value-1', description: 'carol’s' });
    const ofCarol = await call('toolplane.v1.secrets.list', { scope: 'user', user_id: 'carol' });
    expect(ofCarol.secrets).toEqual([
      expect.objectContaining({
        key: 'CAROL_KEY',
        scope: 'user',
        user_id: 'carol',
        agent_id: null,
        description: 'carol’s',
      }),
    ]);
    expect(JSON.stringify(ofCarol)).not.toContain('carol-value-1');
    const ofAlice = await call('toolplane.v1.secrets.list', { user_id: 'alice' });
    expect(ofAlice.secrets.map((s: any) => s.key).sort()).toEqual(['ALICE_ONLY', 'P_C']);
    expect(ofAlice.secrets.every((s: any) => s.user_id === 'alice' && s.scope === 'user')).toBe(true);
    const users = (await call('toolplane.v1.secrets.list', { scope: 'user' })).secrets.map((s: any) => s.user_id);
    expect([...new Set(users)].sort()).toEqual(['alice', 'bob', 'carol']);

    // Deleting as another user finds nothing; as carol it is gone, and her call no longer sees it.
    expect(
      (
        await client.req('toolplane.v1.secrets.delete', {
          org_id: org,
          scope: 'user',
          user_id: 'bob',
          key: 'CAROL_KEY',
        })
      ).error?.code,
    ).toBe('SECRET_NOT_FOUND');
    expect((await envOf('CAROL_KEY', { user_id: 'carol' })).CAROL_KEY).toBe('carol-value-1');
    await call('toolplane.v1.secrets.delete', { scope: 'user', user_id: 'carol', key: 'CAROL_KEY' });
    expect((await call('toolplane.v1.secrets.list', { user_id: 'carol' })).secrets).toEqual([]);
    expect((await envOf('CAROL_KEY', { user_id: 'carol' })).CAROL_KEY).toBe('');

    for (const bad of [
      { scope: 'user', key: 'K', value: 'v' },
      { scope: 'sandbox', user_id: 'alice', key: 'K', value: 'v' },
      { scope: 'agent', agent_id: 'a', user_id: 'alice', key: 'K', value: 'v' },
      { scope: 'user', user_id: 'a\nb', key: 'K', value: 'v' },
    ]) {
      const r = await client.req('toolplane.v1.secrets.set', { org_id: org, ...bad });
      expect([bad, r.error?.code]).toEqual([bad, 'CONTRACT_VIOLATION']);
    }
  });
});
