/**
 * Fuzz of the events the services consume: mutated payloads (arbitrary JSON, near-valid records,
 * bytes that are not JSON) published on every event subject a service reads — tool, agent-tools and
 * mcp-server events, credentials.changed, auth.changed. Each service reads them by their contracts
 * and drops what does not match: afterwards every service still answers and a tool still runs.
 * Each is published twice: unsigned (dropped at the signature check) and signed as the event's
 * owner (so that the payload reaches the contract check the fuzz is about).
 * On a stack of its own: the junk lands in that stack's event stream, never in the shared one.
 */
import fc from 'fast-check';
import {
  AGENT_TOOL_EVENTS,
  AuthChanged,
  CredentialsChanged,
  MCP_SERVER_EVENTS,
  TOOL_EVENTS,
} from '@toolplane/contracts';
import { signedEventHeaders } from '../support/identity';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);
const RUNS = Number(process.env.FUZZ_RUNS ?? 30);

describe(`fuzz of consumed events (seed ${SEED})`, () => {
  let stack: Stack;
  let client: RawClient;
  const org = uniqueOrg('fuzzev');

  beforeAll(async () => {
    const prefix = `${testPrefix()}evfuzz`;
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['registry', 'schema', 'credentials', 'executor', 'runner-local', 'mcp-sync'],
    });
    client = await RawClient.connect(prefix);
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('drops mutated event payloads on every consumed subject; every service still serves, and a tool still runs', async () => {
    const up = await client.req(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: {
          source_code:
            'def probe(a: int) -> int:\n    """Probe.\n\n    Args:\n        a (int): A.\n    """\n    return a + 2\n',
        },
      },
      { timeoutMs: 60_000 },
    );
    expect(up.tool?.name).toBe('probe');
    // Warm what the events would evict: the executor's catalog and env, the registry's definitions.
    expect(
      await client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'probe', args: { a: 1 } },
        { timeoutMs: 60_000 },
      ),
    ).toMatchObject({ status: 'success', func_return: 3 });
    const events = [...TOOL_EVENTS, ...AGENT_TOOL_EVENTS, ...MCP_SERVER_EVENTS, CredentialsChanged, AuthChanged];
    const owner = new Map(events.map((e) => [e.subject, e.publishedBy[0]!]));
    const consumed = events.map((e) => e.subject);
    const near = fc.record(
      {
        event_id: fc.string(),
        occurred_at: fc.string(),
        org_id: fc.oneof(fc.string(), fc.constant(org)),
        tool_id: fc.oneof(fc.string(), fc.constant(up.tool.id)),
        tool_name: fc.oneof(fc.string(), fc.constant(null)),
        agent_id: fc.string(),
        server_id: fc.string(),
        version: fc.anything(),
        tool: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    const cases = fc.sample(
      fc.tuple(
        fc.constantFrom(...consumed),
        fc.oneof(
          fc.jsonValue(),
          near,
          fc.string().map((x) => ({ __raw: x })),
        ),
      ),
      { seed: SEED + 9, numRuns: RUNS * 8 },
    );
    for (const [subject, body] of cases) {
      const raw = (body as { __raw?: string } | null)?.__raw;
      const data = new TextEncoder().encode(raw ?? JSON.stringify(body));
      client.nc.publish(client.subject(subject), data);
      client.nc.publish(client.subject(subject), data, {
        headers: signedEventHeaders(owner.get(subject)!, client.subject(subject), data),
      });
    }
    await client.nc.flush();
    // Every service still answers, and what it caches still leads to the right tool.
    expect((await client.req('toolplane.v1.tools.get', { org_id: org, name: 'probe' })).tool?.id).toBe(up.tool.id);
    expect(
      await client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'probe', args: { a: 40 } },
        { timeoutMs: 60_000 },
      ),
    ).toMatchObject({ status: 'success', func_return: 42 });
    expect((await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
    expect((await client.req('toolplane.v1.secrets.list', { org_id: org })).error).toBeUndefined();
    for (const app of stack.apps.values()) expect([app.name, app.proc.exitCode]).toEqual([app.name, null]);
  });
});
