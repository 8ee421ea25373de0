import { jetstreamManager } from '@nats-io/jetstream';
import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { ROOT } from '../support/env';
import { RawClient } from '../support/nats-client';
import { ADD, ROLL_D20 } from '../support/tools';

const seedSchema = JSON.parse(readFileSync(join(ROOT, 'libs', 'contracts', 'seed', 'tool.schema.json'), 'utf8'));
const validateTool = new Ajv2020({ strict: false }).compile(seedSchema);

describe('registry over the public NATS API', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  it('registers a Python tool with a schema derived from its source', async () => {
    const org = uniqueOrg();
    const { tool } = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: ADD, tags: ['math'] },
    });
    expect(validateTool(tool)).toBe(true);
    expect(tool.id).toMatch(/^tool-[0-9a-f-]{36}$/);
    expect(tool).toMatchObject({
      name: 'add',
      tool_type: 'custom',
      source_type: 'python',
      tags: ['math'],
      return_char_limit: 50000,
    });
    expect(tool.json_schema).toEqual({
      name: 'add',
      description: 'Add two integers.',
      parameters: {
        type: 'object',
        properties: {
          a: { type: 'integer', description: 'The first number.' },
          b: { type: 'integer', description: 'The second number.', default: 2 },
        },
        required: ['a'],
      },
    });
    expect(tool.description).toBe('Add two integers.');
  });

  it('gets a tool by id and by name, and never from another org', async () => {
    const org = uniqueOrg();
    const { tool } = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ROLL_D20 } });
    expect((await client.req('toolplane.v1.tools.get', { org_id: org, id: tool.id })).tool).toEqual(tool);
    expect((await client.req('toolplane.v1.tools.get', { org_id: org, name: 'roll_d20' })).tool).toEqual(tool);
    const other = await client.req('toolplane.v1.tools.get', { org_id: uniqueOrg('other'), id: tool.id });
    expect(other.error).toMatchObject({ code: 'TOOL_NOT_FOUND', retryable: false });
    expect(other.error.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('updates in place when the same name is upserted again (same id)', async () => {
    const org = uniqueOrg();
    const first = (
      await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD, tags: ['a'] } })
    ).tool;
    const changed = ADD.replace('Add two integers.', 'Sum two integers.');
    const second = (
      await client.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: { source_code: changed, return_char_limit: 10 },
      })
    ).tool;
    expect(second.id).toBe(first.id);
    expect(second.description).toBe('Sum two integers.');
    expect(second.return_char_limit).toBe(10);
    expect(second.tags).toEqual(['a']); // omitted fields keep their values
    const { tools } = await client.req('toolplane.v1.tools.list', { org_id: org });
    expect(tools).toHaveLength(1);
  });

  it('lists with cursor pagination and filters by tags and tool types', async () => {
    const org = uniqueOrg();
    const names = Array.from({ length: 7 }, (_, i) => `tool_${i}`);
    for (const [i, n] of names.entries()) {
      await client.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: { source_code: ADD.replace('def add', `def ${n}`), tags: i % 2 ? ['odd'] : ['even'] },
      });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { tools: Array<{ name: string }>; next_cursor: string | null } = await client.req(
        'toolplane.v1.tools.list',
        {
          org_id: org,
          limit: 3,
          ...(cursor ? { cursor } : {}),
        },
      );
      seen.push(...page.tools.map((t) => t.name));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(names);
    const odd = await client.req('toolplane.v1.tools.list', { org_id: org, tags: ['odd'] });
    expect(odd.tools.map((t: { name: string }) => t.name)).toEqual(['tool_1', 'tool_3', 'tool_5']);
    expect((await client.req('toolplane.v1.tools.list', { org_id: org, tool_types: ['external_mcp'] })).tools).toEqual(
      [],
    );
    expect(
      (await client.req('toolplane.v1.tools.list', { org_id: org, tool_types: ['custom'], limit: 200 })).tools,
    ).toHaveLength(7);
    const bad = await client.req('toolplane.v1.tools.list', { org_id: org, cursor: 'bm9wZQ' });
    expect(bad.error.code).toBe('CONTRACT_VIOLATION');
  });

  it('deletes a tool; deleting again or from another org is TOOL_NOT_FOUND', async () => {
    const org = uniqueOrg();
    const { tool } = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    expect((await client.req('toolplane.v1.tools.delete', { org_id: uniqueOrg(), id: tool.id })).error.code).toBe(
      'TOOL_NOT_FOUND',
    );
    expect(await client.req('toolplane.v1.tools.delete', { org_id: org, id: tool.id })).toEqual({ deleted: true });
    expect((await client.req('toolplane.v1.tools.delete', { org_id: org, id: tool.id })).error.code).toBe(
      'TOOL_NOT_FOUND',
    );
    expect((await client.req('toolplane.v1.tools.get', { org_id: org, id: tool.id })).error.code).toBe(
      'TOOL_NOT_FOUND',
    );
  });

  it('publishes created, updated and deleted events on the TOOLPLANE_EVENTS stream', async () => {
    const org = uniqueOrg();
    const { tool } = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD, tags: ['x'] } });
    await client.req('toolplane.v1.tools.delete', { org_id: org, id: tool.id });
    const jsm = await jetstreamManager(client.nc);
    const stream = `${testPrefix()}_TOOLPLANE_EVENTS`;
    const kinds: string[] = [];
    const info = await jsm.streams.info(stream);
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (!m) continue;
      const p = m.json<{ org_id: string; tool_id: string }>();
      if (p?.org_id === org) kinds.push(m.subject.split('.').pop()!);
    }
    expect(kinds).toEqual(['created', 'updated', 'deleted']);
  });

  it('stores nothing when the source cannot be turned into a schema', async () => {
    const org = uniqueOrg();
    const reply = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: 'def broken(:\n  pass' },
    });
    expect(reply.error).toMatchObject({ code: 'SCHEMA_GENERATION_FAILED', retryable: false });
    expect(reply.error.details.reason).toBe('SYNTAX_ERROR');
    expect(reply.error.details.line).toBe(1);
    const undocumented = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: 'def f(x: int) -> int:\n    """Doc.\n    """\n    return x\n' },
    });
    expect(undocumented.error.code).toBe('SCHEMA_GENERATION_FAILED');
    expect(undocumented.error.message).toContain("'x'");
    expect((await client.req('toolplane.v1.tools.list', { org_id: org })).tools).toEqual([]);
  });

  it('accepts an explicit json_schema and keeps it as given', async () => {
    const org = uniqueOrg();
    const json_schema = {
      name: 'echo',
      description: 'Echo.',
      parameters: { type: 'object', properties: { s: { type: 'string' } }, required: ['s'] },
    };
    const { tool } = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: 'def echo(s):\n    return s\n', json_schema },
    });
    expect(tool.json_schema).toEqual(json_schema);
    expect(tool.name).toBe('echo');
    expect(validateTool(tool)).toBe(true);
  });
});
