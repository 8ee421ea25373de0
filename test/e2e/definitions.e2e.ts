/**
 * Model-ready definitions (toolplane.v1.agents.tools.definitions) over the public API: every
 * format is what its provider accepts (validated against each API's tool definition:
 * apps/registry/src/agents/provider-tool.schema.ts), strict mode through the schema engine,
 * exclusions and warnings with reasons, the etag, and a cache that never answers a stale set
 * after a write's reply (this file: one registry replica; definitions-replicas.e2e.ts: two).
 */
import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { providerValidators, type ProviderFormat } from '../../apps/registry/src/agents/provider-tool.schema';

const WEATHER = `def get_weather(city: str, units: str = "c") -> str:
    """Get the weather in a city.

    Args:
        city (str): The city.
        units (str): c or f.
    """
    return city
`;
const RECORD = `from typing import Dict


def put_record(record: Dict[str, str]) -> str:
    """Store a record.

    Args:
        record (Dict[str, str]): Any string fields.
    """
    return "ok"
`;
const ANYTHING = `from typing import Any


def anything(x: Any) -> str:
    """Take anything.

    Args:
        x (Any): Whatever.
    """
    return "ok"
`;
const FORMATS: ProviderFormat[] = ['openai_chat', 'openai_responses', 'anthropic', 'gemini', 'json_schema'];
const nameOf = (d: any): string => d.function?.name ?? d.name;

describe('model-ready definitions', () => {
  let client: RawClient;
  const valid = providerValidators();
  const mcp = new FakeMcpServer();
  const org = uniqueOrg('defs');
  const ids: Record<string, string> = {};
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const definitions = async (o: string, agent: string, format: string, extra: Record<string, unknown> = {}) =>
    ok(await client.req('toolplane.v1.agents.tools.definitions', { org_id: o, agent_id: agent, format, ...extra }));
  const upsert = async (source: string, extra: Record<string, unknown> = {}) =>
    ok(await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: source, ...extra } })).tool;

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    mcp.tools = [echoTool('lookup.v2')];
    await mcp.start();
    for (const [name, source] of [
      ['get_weather', WEATHER],
      ['put_record', RECORD],
      ['anything', ANYTHING],
    ])
      ids[name!] = (await upsert(source!)).id;
    ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'lookup', transport: 'streamable_http', url: mcp.url } },
        { timeoutMs: 30_000 },
      ),
    );
    ok(
      await client.req('toolplane.v1.agents.tools.attach', {
        org_id: org,
        agent_id: 'planner',
        tool_names: ['get_weather', 'put_record', 'anything', 'lookup.v2'],
      }),
    );
    ids['lookup.v2'] = ok(await client.req('toolplane.v1.tools.get', { org_id: org, name: 'lookup.v2' })).tool.id;
  });
  afterAll(async () => {
    await mcp.stop();
    await client?.close();
  });

  it.each(FORMATS)(
    '%s: each definition is what the provider accepts; INVALID and refused names are excluded with reasons',
    async (format) => {
      for (const strict of format === 'gemini' ? [false] : [false, true]) {
        const r = await definitions(org, 'planner', format, { strict });
        expect(r).toMatchObject({ format, strict, etag: expect.any(String) });
        expect(r.definitions.map((d: any) => [nameOf(d), valid[format](d)])).toEqual(
          r.definitions.map((d: any) => [nameOf(d), []]),
        );
        const excluded = Object.fromEntries(r.excluded.map((e: any) => [e.name, e]));
        expect(excluded.anything).toMatchObject({
          tool_id: ids.anything,
          health: 'INVALID',
          reasons: expect.arrayContaining([expect.stringContaining("Missing 'type'")]),
        });
        const sent = r.definitions.map(nameOf);
        if (format === 'gemini') {
          // Gemini's schema has no maps: the dict parameter is sent as a bare OBJECT, and the reply says so.
          expect(r.warnings).toEqual([
            {
              tool_id: ids.put_record,
              name: 'put_record',
              reasons: [expect.stringContaining('record: additionalProperties dropped')],
            },
          ]);
          expect(r.definitions[1].parameters.properties.record).toEqual({
            type: 'OBJECT',
            description: 'Any string fields.',
          });
        }
        if (format === 'gemini' || format === 'json_schema')
          expect(sent).toEqual(['get_weather', 'put_record', 'lookup.v2']);
        else {
          expect(sent).toEqual(['get_weather', 'put_record']);
          expect(excluded['lookup.v2'].reasons).toEqual([
            expect.stringMatching(/does not match (OpenAI|Anthropic)'s pattern \^\[a-zA-Z0-9_-\]\{1,64\}\$/),
          ]);
        }
      }
    },
  );

  it('strict: the strict-able tool gets the engine’s strict schema, the other goes non-strict with the reason', async () => {
    const r = await definitions(org, 'planner', 'openai_chat', { strict: true });
    const [weather, record] = r.definitions;
    const params = ok(await client.req('toolplane.v1.tools.get', { org_id: org, id: ids.get_weather })).tool.json_schema
      .parameters;
    const strictified = ok(await client.req('toolplane.v1.schemas.strictify', { json_schema: params }));
    expect(weather).toEqual({
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Get the weather in a city.',
        parameters: strictified.json_schema,
        strict: true,
      },
    });
    expect(strictified.json_schema).toMatchObject({ additionalProperties: false, required: ['city', 'units'] });
    expect(record.function).toMatchObject({ name: 'put_record', strict: false });
    expect(r.warnings).toEqual([
      { tool_id: ids.put_record, name: 'put_record', reasons: [expect.stringMatching(/^sent non-strict: /)] },
    ]);
    // Not strict: every tool as stored, strict false, no warnings.
    const loose = await definitions(org, 'planner', 'openai_responses');
    expect(loose.definitions.map((d: any) => d.strict)).toEqual([false, false]);
    expect(loose.definitions[0].parameters).toEqual(params);
    expect(loose.warnings).toEqual([]);
    expect(
      (
        await client.req('toolplane.v1.agents.tools.definitions', {
          org_id: org,
          agent_id: 'planner',
          format: 'gemini',
          strict: true,
        })
      ).error.code,
    ).toBe('CONTRACT_VIOLATION');
  });

  it('answers not_modified for an unchanged set, and a new etag once a tool changes', async () => {
    const first = await definitions(org, 'planner', 'anthropic');
    const again = await definitions(org, 'planner', 'anthropic');
    expect(again).toEqual(first);
    expect(await definitions(org, 'planner', 'anthropic', { if_none_match: first.etag })).toEqual({
      not_modified: true,
      etag: first.etag,
    });
    expect((await definitions(org, 'planner', 'anthropic', { if_none_match: 'stale' })).definitions).toEqual(
      first.definitions,
    );
    // Other formats and strictness are other sets with their own etags.
    expect((await definitions(org, 'planner', 'openai_chat')).etag).not.toBe(first.etag);
    await upsert(WEATHER.replace('Get the weather in a city.', 'Get the weather, now in Kelvin too.'));
    const changed = await definitions(org, 'planner', 'anthropic', { if_none_match: first.etag });
    expect(changed.etag).not.toBe(first.etag);
    expect(changed.definitions[0].description).toBe('Get the weather, now in Kelvin too.');
    await upsert(WEATHER);
    expect((await definitions(org, 'planner', 'anthropic')).etag).toBe(first.etag); // the same set, the same etag
  });

  it('reflects attach, detach, update and delete in the very next request', async () => {
    const o = uniqueOrg('defs-fresh');
    const tool = ok(await client.req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code: WEATHER } })).tool;
    const names = async () =>
      (await definitions(o, 'a', 'openai_chat')).definitions.map((d: any) => d.function.description);
    expect(await names()).toEqual([]);
    for (let i = 0; i < 5; i++) {
      ok(await client.req('toolplane.v1.agents.tools.attach', { org_id: o, agent_id: 'a', tool_ids: [tool.id] }));
      expect(await names()).toEqual([i === 0 ? 'Get the weather in a city.' : `Version ${i - 1}.`]);
      ok(
        await client.req('toolplane.v1.tools.upsert', {
          org_id: o,
          tool: { source_code: WEATHER, description: `Version ${i}.` },
        }),
      );
      expect(await names()).toEqual([`Version ${i}.`]);
      ok(await client.req('toolplane.v1.agents.tools.detach', { org_id: o, agent_id: 'a', tool_ids: [tool.id] }));
      expect(await names()).toEqual([]);
    }
    ok(await client.req('toolplane.v1.agents.tools.attach', { org_id: o, agent_id: 'a', tool_ids: [tool.id] }));
    expect(await names()).toHaveLength(1);
    ok(await client.req('toolplane.v1.tools.delete', { org_id: o, id: tool.id }));
    expect(await names()).toEqual([]);
  });

  it("gives another org's agent of the same id its own (empty) set", async () => {
    const r = await definitions(uniqueOrg('defs-other'), 'planner', 'openai_chat');
    expect(r).toMatchObject({ definitions: [], excluded: [], warnings: [] });
  });
});
