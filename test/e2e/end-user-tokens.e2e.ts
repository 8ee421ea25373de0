/**
 * A token bound to an end user (`auth.tokens.create {user_id}`): its calls are that user's — over
 * NATS (user_id filled in at the edge when it names none: records, lists and secrets follow) and
 * through the MCP gateway (the SDK client with the bound org token) — and it cannot act as another
 * user (FORBIDDEN, nothing runs, nothing recorded). Revoking it stops its calls. Shared stack.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { recordOf } from '../support/executions';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';

const WHOAMI = pythonTool('whoami', 'import os\nreturn (os.environ.get("WHO") or "")[::-1]');
const rev = (s: string) => [...s].reverse().join('');

describe('a token bound to an end user acts as that user, and only that user', () => {
  let client: RawClient;
  const clients: Client[] = [];
  const org = uniqueOrg('boundtok');
  const agent = 'agent-b';
  let alice: { token: string; token_id: string };

  /** A request with the bound token (not the test's org-wide one). */
  const asAlice = (subject: string, body: Record<string, unknown>) =>
    client.req(subject, { org_id: org, ...body }, { token: alice.token, timeoutMs: 30_000 });

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: WHOAMI } }, 30_000);
    await client.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: agent, tool_names: ['whoami'] },
      30_000,
    );
    await client.call(
      'toolplane.v1.secrets.set',
      { org_id: org, scope: 'sandbox', key: 'WHO', value: 'the-org-value' },
      30_000,
    );
    for (const u of ['alice', 'bob'])
      await client.call(
        'toolplane.v1.secrets.set',
        { org_id: org, scope: 'user', user_id: u, key: 'WHO', value: `${u}-secret-value` },
        30_000,
      );
    alice = await client.mint(org, { name: 'alice’s agent', user_id: 'alice' } as never);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await client?.close();
  });

  it('is minted with its user, and token lists show it (and only metadata)', async () => {
    expect(alice).toMatchObject({ token_id: expect.stringMatching(/^tok-/), user_id: 'alice' });
    const listed = await client.req('toolplane.v1.auth.tokens.list', { org_id: org });
    const rows = Object.fromEntries(listed.tokens.map((t: any) => [t.token_id, t]));
    expect(rows[alice.token_id]).toMatchObject({ name: 'alice’s agent', user_id: 'alice', revoked_at: null });
    expect(listed.tokens.filter((t: any) => t.token_id !== alice.token_id).every((t: any) => t.user_id === null)).toBe(
      true,
    );
    expect(JSON.stringify(listed)).not.toContain(alice.token);
  });

  it("runs its calls as its user: recorded with the user_id, with that user's secrets", async () => {
    const r = await asAlice('toolplane.v1.tools.execute', { tool_name: 'whoami', args: {} });
    expect(r).toMatchObject({ status: 'success', func_return: rev('alice-secret-value') });
    expect((await recordOf(client, org, r.execution_id)).execution.user_id).toBe('alice');
    // Naming its own user (as the contract reads it, trimmed) is the same.
    const own = await asAlice('toolplane.v1.tools.execute', { tool_name: 'whoami', args: {}, user_id: ' alice ' });
    expect(own.func_return).toBe(rev('alice-secret-value'));
    const batch = await asAlice('toolplane.v1.tools.execute-batch', {
      calls: [{ call_id: 'c1', tool_name: 'whoami', args: {} }],
    });
    expect(batch.results[0]).toMatchObject({ status: 'success', func_return: rev('alice-secret-value') });
    expect((await recordOf(client, org, batch.results[0].execution_id)).execution.user_id).toBe('alice');
  });

  it('cannot act as another user: FORBIDDEN naming its user, nothing runs, nothing is recorded for them', async () => {
    for (const [subject, body] of [
      ['toolplane.v1.tools.execute', { tool_name: 'whoami', args: {}, user_id: 'bob' }],
      [
        'toolplane.v1.tools.execute-batch',
        { user_id: 'bob', calls: [{ call_id: 'c1', tool_name: 'whoami', args: {} }] },
      ],
      ['toolplane.v1.executions.list', { user_id: 'bob' }],
      ['toolplane.v1.secrets.list', { user_id: 'bob' }],
      ['toolplane.v1.secrets.set', { scope: 'user', user_id: 'bob', key: 'WHO', value: 'overwritten-by-alice' }],
    ] as const) {
      const r = await asAlice(subject, body);
      expect([subject, r.error?.code, r.error?.retryable]).toEqual([subject, 'FORBIDDEN', false]);
      expect(r.error.message).toContain('bound to end user alice');
    }
    expect(
      (await client.call('toolplane.v1.executions.list', { org_id: org, user_id: 'bob' }, 15_000)).executions,
    ).toEqual([]);
    const asBob = await client.req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'whoami',
      args: {},
      user_id: 'bob',
    });
    expect(asBob.func_return).toBe(rev('bob-secret-value'));
  });

  it("sees and manages its user's executions and secrets only (the user filled in where it names none)", async () => {
    await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'whoami', args: {} });
    const listed = await asAlice('toolplane.v1.executions.list', {});
    expect(listed.executions.length).toBeGreaterThan(0);
    expect(listed.executions.every((e: any) => e.user_id === 'alice')).toBe(true);
    expect(
      (await asAlice('toolplane.v1.secrets.set', { scope: 'user', key: 'ALICE_NOTE', value: 'alice-note-value' }))
        .secret,
    ).toMatchObject({ scope: 'user', user_id: 'alice' });
    const secrets = await asAlice('toolplane.v1.secrets.list', {});
    expect(secrets.secrets.map((s: any) => [s.user_id, s.key]).sort()).toEqual([
      ['alice', 'ALICE_NOTE'],
      ['alice', 'WHO'],
    ]);
    // An org-wide secret is not the user's to write.
    expect(
      (await asAlice('toolplane.v1.secrets.set', { scope: 'sandbox', key: 'WHO', value: 'org-overwrite' })).error?.code,
    ).toBe('CONTRACT_VIOLATION');
  });

  it("cannot read, approve, deny or complete another user's execution (or one with no user): not found, as another org's", async () => {
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: pythonTool('guarded', 'return "ran"'), default_requires_approval: true } },
      30_000,
    );
    const bobs = await client.req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'guarded',
      args: {},
      user_id: 'bob',
    });
    const nobodys = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'guarded', args: {} });
    const alices = await asAlice('toolplane.v1.tools.execute', { tool_name: 'guarded', args: {} });
    expect([bobs.status, nobodys.status, alices.status]).toEqual([
      'pending_approval',
      'pending_approval',
      'pending_approval',
    ]);
    for (const id of [bobs.execution_id, nobodys.execution_id]) {
      for (const [subject, body] of [
        ['toolplane.v1.executions.get', {}],
        ['toolplane.v1.executions.approve', {}],
        ['toolplane.v1.executions.deny', { reason: 'not mine' }],
        ['toolplane.v1.executions.submit-result', { status: 'success', func_return: 'forged' }],
      ] as const) {
        expect([subject, (await asAlice(subject, { execution_id: id, ...body })).error?.code]).toEqual([
          subject,
          'EXECUTION_NOT_FOUND',
        ]);
      }
      // Still waiting, untouched.
      expect(
        (await client.req('toolplane.v1.executions.get', { org_id: org, execution_id: id })).execution.status,
      ).toBe('pending_approval');
    }
    // Its own user's execution it may read and approve.
    expect(
      (await asAlice('toolplane.v1.executions.get', { execution_id: alices.execution_id })).execution.user_id,
    ).toBe('alice');
    expect((await asAlice('toolplane.v1.executions.approve', { execution_id: alices.execution_id })).func_return).toBe(
      'ran',
    );
  });

  it('through the MCP gateway (the bound org token), its calls are recorded with its user and get its secrets', async () => {
    const { client: mcp } = await mcpClient(agentEndpoint(agent), alice.token);
    clients.push(mcp);
    const r = await mcp.callTool({ name: 'whoami', arguments: {} });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: 'text', text: rev('alice-secret-value') }]);
    const mine = await expectEventually(async () => {
      const l = await client.call(
        'toolplane.v1.executions.list',
        { org_id: org, user_id: 'alice', agent_id: agent },
        15_000,
      );
      expect(l.executions.length).toBe(1);
      return l.executions[0];
    });
    expect(mine).toMatchObject({ user_id: 'alice', agent_id: agent, status: 'succeeded' });
    // An org-wide token through the gateway stays without a user.
    const { client: orgWide } = await mcpClient(agentEndpoint(agent), await client.tokenFor(org));
    clients.push(orgWide);
    expect((await orgWide.callTool({ name: 'whoami', arguments: {} })).content).toEqual([
      { type: 'text', text: rev('the-org-value') },
    ]);
  });

  it('stops working once revoked (every service refuses it within the auth refresh interval)', async () => {
    expect(await client.req('toolplane.v1.auth.tokens.revoke', { org_id: org, token_id: alice.token_id })).toEqual({
      revoked: true,
    });
    await expectEventually(
      async () =>
        expect((await asAlice('toolplane.v1.tools.execute', { tool_name: 'whoami', args: {} })).error?.code).toBe(
          'UNAUTHENTICATED',
        ),
      {
        timeoutMs: 20_000,
        intervalMs: 50,
      },
    );
    expect((await asAlice('toolplane.v1.executions.list', {})).error?.code).toBe('UNAUTHENTICATED');
  });
});
