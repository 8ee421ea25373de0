import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, startApp, startStack, stopProcess, type RunningApp, type Stack } from '../support/stack';
import { ADD } from '../support/tools';

const HITS = 'toolplane_registry_definitions_cache_hits_total';
const INVALIDATIONS = 'toolplane_registry_definitions_invalidations_total';

/**
 * Two registry replicas (one queue group), each caching definitions with a TTL far longer than the
 * test: a write served by either replica must be visible in the next definitions request, whichever
 * replica serves it — the writer drops its own cache before replying, the other replica when the
 * write's event reaches it (published before the reply).
 */
describe('definitions across registry replicas', () => {
  let stack: Stack;
  let second: RunningApp;
  let client: RawClient;
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };

  beforeAll(async () => {
    const prefix = `${testPrefix()}.defreplicas`;
    const env = { REGISTRY_DEFINITIONS_CACHE_TTL_MS: '3600000' };
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['registry', 'schema', 'credentials'],
      appEnv: { registry: env },
    });
    second = await startApp('registry', { prefix, databaseUrl: testDatabaseUrl(), appEnv: { registry: env } });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    if (second) await stopProcess(second.proc);
    await stack?.stop();
  });

  it('never answers a set older than the last write’s reply, on either replica', async () => {
    const org = uniqueOrg('replicas');
    const replicas = [stack.apps.get('registry')!, second];
    const tool = ok(
      await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD, description: 'v0' } }),
    ).tool;
    ok(await client.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: 'agent', tool_ids: [tool.id] }));
    const described = async () =>
      (
        await client.req('toolplane.v1.agents.tools.definitions', {
          org_id: org,
          agent_id: 'agent',
          format: 'openai_chat',
        })
      ).definitions.map((d: any) => d.function.description);
    const hitsBefore = await Promise.all(replicas.map((r) => metricOf(r, HITS)));
    const invalidationsBefore = await Promise.all(replicas.map((r) => metricOf(r, INVALIDATIONS)));
    // Each round: both replicas warm (12 reads: both serve some, but for 2 × 0.5^12 odds), then a
    // write through one of them, then reads that may land on either.
    for (let round = 1; round <= 20; round++) {
      for (let i = 0; i < 12; i++) expect(await described()).toEqual(round % 2 ? [`v${round - 1}`] : []);
      if (round % 2) {
        ok(
          await client.req('toolplane.v1.tools.upsert', {
            org_id: org,
            tool: { source_code: ADD, description: `v${round}` },
          }),
        );
        ok(
          await client.req('toolplane.v1.agents.tools.detach', { org_id: org, agent_id: 'agent', tool_ids: [tool.id] }),
        );
      } else {
        ok(
          await client.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: 'agent', tool_ids: [tool.id] }),
        );
        expect(await described()).toEqual([`v${round - 1}`]);
        ok(
          await client.req('toolplane.v1.tools.upsert', {
            org_id: org,
            tool: { source_code: ADD, description: `v${round}` },
          }),
        );
      }
      for (let i = 0; i < 4; i++) expect(await described()).toEqual(round % 2 ? [] : [`v${round}`]);
    }
    // Both replicas served from their caches, and both dropped them on every change (theirs or the other's).
    const hitsAfter = await Promise.all(replicas.map((r) => metricOf(r, HITS)));
    expect(hitsAfter.map((h, i) => h > hitsBefore[i]!)).toEqual([true, true]);
    const invalidated = async () =>
      (await Promise.all(replicas.map((r) => metricOf(r, INVALIDATIONS)))).map((n, i) => n - invalidationsBefore[i]!);
    // 40 writes; each replica counts every one (its own, and the other's through the event).
    await expectEventually(async () => expect((await invalidated()).map((n) => n >= 40)).toEqual([true, true]), {
      timeoutMs: 15_000,
      intervalMs: 100,
    });
  });
});
