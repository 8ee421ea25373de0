import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { FakeMcpServer, type FakeTool } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { startApp, startStack, stopProcess, type RunningApp, type Stack } from '../support/stack';

/**
 * Two mcp-sync replicas (one queue group) that keep servers in memory for tool calls, with a TTL
 * long enough never to expire here: an update or removal made through one replica must reach
 * calls served by the other at once (its sync/removal events evict the other's entry).
 */
describe('MCP tool calls across mcp-sync replicas', () => {
  let stack: Stack;
  let second: RunningApp;
  let client: RawClient;
  const fakes: FakeMcpServer[] = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const who = (answer: string): FakeTool => ({
    def: { name: 'who', description: 'Says which server answered.', inputSchema: { type: 'object', properties: {} } },
    handler: async () => ({ content: [{ type: 'text', text: answer }] }),
  });
  const fake = async (answer: string) => {
    const f = new FakeMcpServer();
    f.tools = [who(answer)];
    fakes.push(await f.start());
    return f;
  };
  const callMany = async (org: string, n: number) =>
    Promise.all(
      Array.from({ length: n }, () =>
        client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'who', args: {} }, { timeoutMs: 30_000 }),
      ),
    );

  beforeAll(async () => {
    const prefix = `${testPrefix()}.replicas`;
    const env = { MCP_SERVER_CACHE_TTL_MS: '600000', MCP_RESYNC_INTERVAL_MS: '0' };
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['registry', 'credentials', 'executor', 'mcp-sync'],
      appEnv: { 'mcp-sync': env },
    });
    second = await startApp('mcp-sync', { prefix, databaseUrl: testDatabaseUrl(), appEnv: { 'mcp-sync': env } });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.stop()));
    await client?.close();
    if (second) await stopProcess(second.proc);
    await stack?.stop();
  });

  it('an update and a removal through one replica take effect on calls served by either, at once', async () => {
    const org = uniqueOrg('replicas');
    const one = await fake('one');
    const two = await fake('two');
    ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'moving', transport: 'streamable_http', url: one.url } },
        { timeoutMs: 30_000 },
      ),
    );
    // Enough calls that both replicas serve some (and cache the server): 2 × 0.5^40 odds otherwise.
    const before = await callMany(org, 40);
    expect(before.map((r) => r.func_return)).toEqual(Array(40).fill('one'));
    for (const app of [stack.apps.get('mcp-sync')!, second])
      expect(app.output()).toContain('connected to MCP server moving');

    ok(
      await client.req(
        'toolplane.v1.mcp.servers.update',
        { org_id: org, name: 'moving', server: { url: two.url } },
        { timeoutMs: 30_000 },
      ),
    );
    const after = await callMany(org, 40);
    expect(after.map((r) => r.func_return)).toEqual(Array(40).fill('two'));
    expect(one.observed.calls).toHaveLength(40);

    // The registry's tool, as the executor hands it over: ask mcp-sync directly after the removal.
    const tool = ok(await client.req('toolplane.v1.tools.get', { org_id: org, name: 'who' })).tool;
    ok(await client.req('toolplane.v1.mcp.servers.remove', { org_id: org, name: 'moving' }));
    const direct = await Promise.all(
      Array.from({ length: 40 }, () =>
        client.req('toolplane.internal.v1.mcp-tools.call', {
          org_id: org,
          tool_id: tool.id,
          mcp: tool.metadata_.mcp,
          args: {},
          timeout_ms: 5000,
          max_timeout_ms: 5000,
        }),
      ),
    );
    expect(direct.map((r) => r.error?.code)).toEqual(Array(40).fill('MCP_SERVER_NOT_FOUND'));
    expect(two.observed.calls).toHaveLength(40);
  });
  it('a removal during a sync, on either replica, leaves none of the server’s tools behind', async () => {
    // Four rounds: the sync and the removal land on the same replica or on different ones.
    for (let round = 0; round < 4; round++) {
      const org = uniqueOrg('mcp-rm-race');
      const f = await fake('racing');
      ok(
        await client.req(
          'toolplane.v1.mcp.servers.add',
          { org_id: org, server: { name: 'racing', transport: 'streamable_http', url: f.url } },
          { timeoutMs: 30_000 },
        ),
      );
      f.tools.push({ ...who('x'), def: { ...who('x').def, name: 'who_else' } });
      f.listDelayMs = 800;
      const listed = f.observed.listCalls;
      const syncing = client.req(
        'toolplane.v1.mcp.servers.sync',
        { org_id: org, name: 'racing' },
        { timeoutMs: 30_000 },
      );
      await expectEventually(() => expect(f.observed.listCalls).not.toBe(listed), {
        timeoutMs: 30_000,
        intervalMs: 20,
      });
      ok(await client.req('toolplane.v1.mcp.servers.remove', { org_id: org, name: 'racing' }, { timeoutMs: 30_000 }));
      await syncing; // synced before the removal, or refused after it: either way, what it wrote is gone
      const left = ok(await client.req('toolplane.v1.tools.list', { org_id: org }));
      expect([round, left.tools.map((t: { name: string }) => t.name)]).toEqual([round, []]);
    }
  });
});
