import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer, type FakeTool } from '../support/mcp-servers';
import { Headers } from '@toolplane/contracts';
import { sealerOf } from '../support/identity';
import { RawClient } from '../support/nats-client';

/**
 * Tool sets far larger than one NATS message (max payload 1 MiB): mcp-sync stages them with the
 * registry in pages under MCP_SYNC_MESSAGE_BYTES (default 512 KiB) and applies them in one sync.
 */
describe('MCP sync of tool sets larger than a NATS message', () => {
  const BUDGET = 512 * 1024;
  let client: RawClient;
  let db: Client;
  const fakes: FakeMcpServer[] = [];
  /** Every registry write mcp-sync sends (a plain subscriber gets a copy of each request). */
  const writes: Array<{ subject: string; bytes: number; body: any }> = [];
  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const toolsOf = async (org: string, tag: string) => {
    const all: any[] = [];
    let cursor: string | undefined;
    do {
      // Small pages: these tools are ~9 KB each, and a reply has to fit in a NATS message too.
      const r = ok(
        await client.req('toolplane.v1.tools.list', {
          org_id: org,
          tags: [tag],
          limit: 40,
          ...(cursor ? { cursor } : {}),
        }),
      );
      all.push(...r.tools);
      cursor = r.next_cursor ?? undefined;
    } while (cursor);
    return all;
  };
  const stagedRows = async (serverId: string) =>
    Number(
      (await db.query('SELECT count(*)::int AS n FROM registry.external_tool_pages WHERE source_id = $1', [serverId]))
        .rows[0].n,
    );
  const writesFor = (serverId: string) => writes.filter((w) => w.body.source_id === serverId);
  const fake = async (tools: FakeTool[], pageSize = 0) => {
    const f = new FakeMcpServer();
    f.tools = tools;
    f.pageSize = pageSize;
    fakes.push(await f.start());
    return f;
  };

  /** ~4 KB of description and ~4 KB of schema (8 described properties). */
  const bulkyTool = (name: string, version = 'v1'): FakeTool => ({
    def: {
      name,
      description: `${name} ${version}: ${'lorem ipsum dolor sit amet '.repeat(150)}`.slice(0, 4000),
      inputSchema: {
        type: 'object',
        properties: Object.fromEntries(
          Array.from({ length: 8 }, (_, i) => [
            `field_${i}`,
            { type: 'string', description: `${name} field ${i}: ${'x'.repeat(480)}` },
          ]),
        ),
        required: ['field_0'],
      },
    },
    handler: async (args) => ({ content: [{ type: 'text', text: `${name}:${String(args.field_0)}` }] }),
  });
  /** A tool whose definition alone is over 600 KB. */
  const hugeTool = (name: string): FakeTool => ({
    def: {
      name,
      description: `${name}, enormous.`,
      inputSchema: {
        type: 'object',
        properties: Object.fromEntries(
          Array.from({ length: 150 }, (_, i) => [`p${i}`, { type: 'string', description: 'y'.repeat(4000) }]),
        ),
      },
    },
  });

  beforeAll(async () => {
    const registry = sealerOf('registry');
    client = await RawClient.connect(testPrefix());
    for (const subject of ['toolplane.internal.v1.external-tools.stage', 'toolplane.internal.v1.external-tools.sync']) {
      client.nc.subscribe(client.subject(subject), {
        callback: (_e, m) => {
          // Sealed for the registry: the test holds the run's service keys and opens it as the registry would.
          const body = registry.openRequest(m.subject, m.headers?.get(Headers.SERVICE_SEAL) ?? '', m.data).body;
          writes.push({ subject, bytes: m.data.byteLength, body: JSON.parse(body.toString('utf8')) });
        },
      });
    }
    await client.nc.flush();
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
  });
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.stop()));
    await db.end();
    await client.close();
  });

  it('syncs 400 tools (over 3 MB) through staged pages with nothing lost, and a resync removes exactly the tools gone', async () => {
    const org = uniqueOrg('mcp-large');
    const names = Array.from({ length: 400 }, (_, i) => `bulk_${String(i).padStart(3, '0')}`);
    const f = await fake(
      names.map((n) => bulkyTool(n)),
      100,
    );

    const added = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'large', transport: 'streamable_http', url: f.url } },
        { timeoutMs: 60_000 },
      ),
    );
    expect(added.sync).toMatchObject({
      added: 400,
      updated: 0,
      removed: 0,
      listed: 400,
      pages: 4,
      complete: true,
      errors: [],
    });
    expect(added.server.tool_count).toBe(400);
    const serverId: string = added.server.id;

    // The set really is larger than any NATS message, and went as several staged pages, each under the budget.
    const stored = await toolsOf(org, 'mcp:large');
    const totalBytes = stored.reduce(
      (a, t) =>
        a +
        Buffer.byteLength(
          JSON.stringify({
            name: t.name,
            description: t.description,
            json_schema: t.json_schema,
            tags: t.tags,
            metadata_: t.metadata_,
          }),
        ),
      0,
    );
    expect(totalBytes).toBeGreaterThan(3 * 1024 * 1024);
    const first = writesFor(serverId);
    const stages = first.filter((w) => w.subject.endsWith('.stage'));
    expect(stages.length).toBeGreaterThanOrEqual(7);
    for (const w of first) expect(w.bytes).toBeLessThanOrEqual(BUDGET);
    const sync = first.filter((w) => w.subject.endsWith('.sync'));
    expect(sync).toHaveLength(1);
    expect(sync[0]!.body).toMatchObject({ tools: [], complete: true, staged: { pages: stages.length } });
    expect(new Set(stages.map((w) => w.body.sync_id))).toEqual(new Set([sync[0]!.body.staged.sync_id]));
    expect(stages.map((w) => w.body.page).sort((a, b) => a - b)).toEqual(
      Array.from({ length: stages.length }, (_, i) => i),
    );

    // Every tool arrived whole.
    expect(stored.map((t) => t.name).sort()).toEqual(names);
    for (const t of stored) {
      const def = f.tools.find((x) => x.def.name === t.name)!.def as {
        description: string;
        inputSchema: { properties: Record<string, unknown> };
      };
      expect(t.description).toBe(def.description);
      expect(t.json_schema.parameters.properties).toEqual(def.inputSchema.properties);
    }
    expect(await stagedRows(serverId)).toBe(0);
    const call = ok(
      await client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'bulk_399', args: { field_0: 'hi' } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(call).toMatchObject({ status: 'success', func_return: 'bulk_399:hi' });

    // Upstream drops 40 tools and changes 5: exactly those go, exactly those change.
    const dropped = names.filter((_, i) => i % 10 === 3);
    const changed = ['bulk_000', 'bulk_101', 'bulk_202', 'bulk_305', 'bulk_398'];
    f.tools = f.tools
      .filter((t) => !dropped.includes(t.def.name as string))
      .map((t) => (changed.includes(t.def.name as string) ? bulkyTool(t.def.name as string, 'v2') : t));
    writes.length = 0;
    const resync = ok(
      await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'large' }, { timeoutMs: 60_000 }),
    );
    expect(resync.sync).toMatchObject({
      added: 0,
      updated: 5,
      removed: 40,
      unchanged: 355,
      listed: 360,
      complete: true,
      errors: [],
    });
    expect(resync.server.tool_count).toBe(360);
    expect(writesFor(serverId).filter((w) => w.subject.endsWith('.stage')).length).toBeGreaterThanOrEqual(6);
    const after = await toolsOf(org, 'mcp:large');
    expect(after.map((t) => t.name).sort()).toEqual(names.filter((n) => !dropped.includes(n)));
    expect(
      after
        .filter((t) => t.description.includes(' v2: '))
        .map((t) => t.name)
        .sort(),
    ).toEqual(changed);
    expect(await stagedRows(serverId)).toBe(0);
  });

  it('reports a tool too large for any message and keeps its stored version, while other removals still apply', async () => {
    const org = uniqueOrg('mcp-huge');
    const f = await fake([echoTool('small_a'), echoTool('grows'), echoTool('small_b')]);
    const added = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'huge', transport: 'streamable_http', url: f.url } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(added.sync).toMatchObject({ added: 3, errors: [] });
    const serverId: string = added.server.id;

    // `grows` becomes enormous, `born_huge` appears enormous, `small_b` goes away.
    f.tools = [echoTool('small_a'), hugeTool('grows'), hugeTool('born_huge')];
    writes.length = 0;
    const r = ok(
      await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'huge' }, { timeoutMs: 60_000 }),
    );
    expect(r.sync).toMatchObject({ added: 0, updated: 0, removed: 1, unchanged: 1, listed: 3, complete: true });
    expect(r.sync.errors).toEqual([
      expect.objectContaining({
        code: 'TOOL_TOO_LARGE',
        tool: 'grows',
        message: expect.stringContaining('MCP_SYNC_MESSAGE_BYTES'),
      }),
      expect.objectContaining({ code: 'TOOL_TOO_LARGE', tool: 'born_huge' }),
    ]);
    expect(r.server.tool_count).toBe(2);
    for (const w of writesFor(serverId)) expect(w.bytes).toBeLessThanOrEqual(BUDGET);
    expect(writesFor(serverId).find((w) => w.subject.endsWith('.sync'))!.body.keep).toEqual(['grows', 'born_huge']);

    const tools = await toolsOf(org, 'mcp:huge');
    expect(tools.map((t) => t.name).sort()).toEqual(['grows', 'small_a']);
    expect(tools.find((t) => t.name === 'grows').description).toBe('Echo for grows.');
    expect(await stagedRows(serverId)).toBe(0);

    // Back to a normal size: the tool is written again.
    f.tools = [echoTool('small_a'), echoTool('grows', 'v2:')];
    (f.tools[1]!.def as { description: string }).description = 'Smaller again.';
    const back = ok(
      await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'huge' }, { timeoutMs: 30_000 }),
    );
    expect(back.sync).toMatchObject({ updated: 1, unchanged: 1, removed: 0, errors: [] });
    expect((await toolsOf(org, 'mcp:huge')).find((t) => t.name === 'grows').description).toBe('Smaller again.');
  });
});
