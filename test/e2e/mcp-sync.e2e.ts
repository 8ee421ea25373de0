import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer, sleep } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';

/** mcp-sync against in-process SDK servers whose tools and behaviour each test controls. */
describe('MCP sync and execution (in-process servers)', () => {
  let client: RawClient;
  const fakes: FakeMcpServer[] = [];
  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const add = (org: string, server: Record<string, unknown>) =>
    client.req('toolplane.v1.mcp.servers.add', { org_id: org, server }, { timeoutMs: 30_000 });
  const toolsOf = async (org: string, tag: string) => {
    const all: any[] = [];
    let cursor: string | undefined;
    do {
      const r = ok(
        await client.req('toolplane.v1.tools.list', {
          org_id: org,
          tags: [tag],
          limit: 200,
          ...(cursor ? { cursor } : {}),
        }),
      );
      all.push(...r.tools);
      cursor = r.next_cursor ?? undefined;
    } while (cursor);
    return all;
  };
  const execute = (org: string, body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 30_000 });
  const fake = async (setup: (f: FakeMcpServer) => void) => {
    const f = new FakeMcpServer();
    setup(f);
    fakes.push(await f.start());
    return f;
  };
  const waitFor = <T>(fn: () => Promise<T>, pred: (v: T) => boolean, timeoutMs = 10_000): Promise<T> =>
    expectEventually(
      async () => {
        const v = await fn();
        if (!pred(v)) throw new Error(`still ${JSON.stringify(v)}`);
        return v;
      },
      { timeoutMs, intervalMs: 100 },
    );

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.stop()));
    await client.close();
  });

  it('walks every page of tools/list, stores every tool and reports the counts', async () => {
    const org = uniqueOrg('mcp-pages');
    const f = await fake((s) => {
      s.tools = Array.from({ length: 23 }, (_, i) => echoTool(`tool_${String(i).padStart(2, '0')}`));
      s.pageSize = 5;
    });
    const r = ok(await add(org, { name: 'paged', transport: 'streamable_http', url: f.url }));
    expect(r.sync).toMatchObject({
      added: 23,
      updated: 0,
      removed: 0,
      invalid: 0,
      listed: 23,
      pages: 5,
      complete: true,
      errors: [],
    });
    expect(r.server).toMatchObject({
      name: 'paged',
      transport: 'streamable_http',
      url: f.url,
      tool_count: 23,
      last_sync: { trigger: 'add', ok: true },
    });
    const tools = await toolsOf(org, 'mcp:paged');
    expect(tools.map((t) => t.name).sort()).toEqual(
      Array.from({ length: 23 }, (_, i) => `tool_${String(i).padStart(2, '0')}`),
    );
    expect(tools[0]).toMatchObject({
      tool_type: 'external_mcp',
      tags: ['mcp:paged'],
      metadata_: { mcp: { server_id: r.server.id, server_name: 'paged', health: 'STRICT_COMPLIANT', reasons: [] } },
    });
    expect(tools[0].json_schema.parameters).toMatchObject({
      type: 'object',
      required: ['text'],
      additionalProperties: false,
    });
    // A second sync changes nothing.
    const again = ok(await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'paged' }));
    expect(again.sync).toMatchObject({ added: 0, updated: 0, removed: 0, unchanged: 23 });
  });

  it('keeps the good tools when one is malformed: INVALID ones are stored with reasons, unnamed ones reported', async () => {
    const org = uniqueOrg('mcp-bad');
    const f = await fake((s) => {
      s.tools = [
        echoTool('good_one'),
        { def: { name: 'broken', description: 'Its schema is a string.', inputSchema: 'not a schema' } },
        { def: { description: 'I have no name', inputSchema: { type: 'object' } } },
        {
          def: { name: 'bare', description: 'Bare object schema.', inputSchema: { type: 'object' } },
          handler: async () => ({ content: [{ type: 'text', text: 'bare ok' }] }),
        },
        echoTool('good_two'),
      ];
    });
    const r = ok(await add(org, { name: 'mixed', transport: 'streamable_http', url: f.url }));
    expect(r.sync).toMatchObject({ added: 4, invalid: 1, listed: 5, complete: true });
    expect(r.sync.invalid_tools).toEqual([
      { name: 'broken', reasons: expect.arrayContaining(['inputSchema: missing or not a JSON object']) },
    ]);
    expect(r.sync.errors).toEqual([expect.objectContaining({ code: 'MCP_TOOL_MALFORMED' })]);
    const tools = await toolsOf(org, 'mcp:mixed');
    expect(tools.map((t) => t.name).sort()).toEqual(['bare', 'broken', 'good_one', 'good_two']);
    const bare = tools.find((t) => t.name === 'bare');
    expect(bare.json_schema.parameters).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    expect(bare.metadata_.mcp.original_schema).toEqual({ type: 'object' });
    expect((await execute(org, { tool_name: 'bare', args: {} })).func_return).toBe('bare ok');
    const broken = await execute(org, { tool_name: 'broken', args: {} });
    expect(broken.error).toMatchObject({ code: 'SCHEMA_INVALID' });
    expect(f.observed.calls).not.toContain('broken');
  });

  it('runs a tool through tools.execute, maps isError to status error, and validates args first', async () => {
    const org = uniqueOrg('mcp-exec');
    const f = await fake((s) => {
      s.tools = [
        echoTool('shout', '>> '),
        {
          def: { name: 'fails', description: 'Always fails.', inputSchema: { type: 'object', properties: {} } },
          handler: async () => ({ content: [{ type: 'text', text: 'disk is full' }], isError: true }),
        },
        {
          def: { name: 'structured', description: 'Structured.', inputSchema: { type: 'object', properties: {} } },
          handler: async () => ({
            content: [{ type: 'text', text: '{"n":1}' }],
            structuredContent: { n: 1, list: [1, 2] },
          }),
        },
      ];
    });
    ok(await add(org, { name: 'exec', transport: 'streamable_http', url: f.url }));
    const r = await execute(org, { tool_name: 'shout', args: { text: 'hello' } });
    expect(r).toMatchObject({ status: 'success', func_return: '>> hello', provider: 'mcp', stdout: [], stderr: [] });
    expect(r.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const failed = await execute(org, { tool_name: 'fails', args: {} });
    expect(failed).toMatchObject({
      status: 'error',
      func_return: 'disk is full',
      error: { code: 'TOOL_EXCEPTION', message: 'disk is full' },
    });
    expect((await execute(org, { tool_name: 'structured', args: {} })).func_return).toEqual({ n: 1, list: [1, 2] });
    const bad = await execute(org, { tool_name: 'shout', args: { text: 3 } });
    expect(bad.error.code).toBe('INVALID_ARGUMENTS');
    expect(f.observed.calls.filter((c) => c === 'shout')).toHaveLength(1);
  });

  it('times out a slow tool, sends the cancellation to the server, and lets progress extend the timeout', async () => {
    const org = uniqueOrg('mcp-slow');
    const f = await fake((s) => {
      s.tools = [
        {
          def: { name: 'slow', description: 'Sleeps 10 s.', inputSchema: { type: 'object', properties: {} } },
          handler: async (_a, x) => (await sleep(10_000, x.signal), { content: [{ type: 'text', text: 'late' }] }),
        },
        {
          def: {
            name: 'busy',
            description: 'Works 1.6 s, reporting progress.',
            inputSchema: { type: 'object', properties: {} },
          },
          handler: async (_a, x) => {
            for (let i = 1; i <= 8; i++) {
              await sleep(200);
              await x.progress(i, 8);
            }
            return { content: [{ type: 'text', text: 'done' }] };
          },
        },
      ];
    });
    ok(await add(org, { name: 'slowpoke', transport: 'streamable_http', url: f.url }));
    const r = await execute(org, { tool_name: 'slow', args: {}, timeout_ms: 700 });
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('EXECUTION_TIMEOUT');
    expect(r.func_return).toMatch(/^Error executing function slow: TimeoutError/);
    await waitFor(
      async () => f.observed.cancelled,
      (c) => c.includes('slow'),
    );
    expect(f.observed.cancelled).toContain('slow');
    const busy = await execute(org, { tool_name: 'busy', args: {}, timeout_ms: 700 });
    expect(busy).toMatchObject({ status: 'success', func_return: 'done' });
  });

  it('re-lists every page on tools/list_changed: added, changed and removed upstream tools follow', async () => {
    const org = uniqueOrg('mcp-changed');
    const f = await fake((s) => {
      s.tools = [echoTool('alpha'), echoTool('beta'), echoTool('gamma')];
      s.pageSize = 2;
    });
    ok(await add(org, { name: 'moving', transport: 'streamable_http', url: f.url }));
    f.tools = [
      echoTool('alpha'),
      { ...echoTool('beta'), def: { ...echoTool('beta').def, description: 'Beta, reworded.' } },
      echoTool('delta'),
    ];
    await f.notifyListChanged();
    const names = await waitFor(
      async () => (await toolsOf(org, 'mcp:moving')).map((t) => `${t.name}:${t.description}`).sort(),
      (n) => n.includes('delta:Echo for delta.') && !n.some((x) => x.startsWith('gamma')),
    );
    expect(names).toEqual(['alpha:Echo for alpha.', 'beta:Beta, reworded.', 'delta:Echo for delta.']);
    // The sync state is recorded just after the registry write the wait above saw.
    const { server } = await waitFor(
      async () => ok(await client.req('toolplane.v1.mcp.servers.get', { org_id: org, name: 'moving' })),
      (r) => r.server.last_sync?.trigger === 'list_changed',
    );
    expect(server.last_sync).toMatchObject({
      trigger: 'list_changed',
      ok: true,
      report: { added: 1, updated: 1, removed: 1, pages: 2 },
    });
  });

  it('never overwrites a custom tool or another server’s tool: collisions are reported, tool_prefix namespaces', async () => {
    const org = uniqueOrg('mcp-names');
    ok(
      await client.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: { source_code: pythonTool('lookup', 'return "custom"') },
      }),
    );
    const one = await fake((s) => (s.tools = [echoTool('lookup'), echoTool('shared')]));
    const two = await fake((s) => (s.tools = [echoTool('shared', 'two:')]));
    const a = ok(await add(org, { name: 'first', transport: 'streamable_http', url: one.url }));
    expect(a.sync).toMatchObject({
      added: 1,
      errors: [expect.objectContaining({ code: 'TOOL_NAME_COLLISION', tool: 'lookup' })],
    });
    const b = ok(await add(org, { name: 'second', transport: 'streamable_http', url: two.url }));
    expect(b.sync).toMatchObject({
      added: 0,
      errors: [expect.objectContaining({ code: 'TOOL_NAME_COLLISION', tool: 'shared' })],
    });
    expect((await execute(org, { tool_name: 'lookup', args: {} })).func_return).toBe('custom');
    const prefixed = ok(
      await client.req('toolplane.v1.mcp.servers.update', {
        org_id: org,
        name: 'second',
        server: { tool_prefix: 'two' },
      }),
    );
    expect(prefixed.sync).toMatchObject({ added: 1, errors: [] });
    expect((await execute(org, { tool_name: 'two_shared', args: { text: 'x' } })).func_return).toBe('two:x');
    expect((await execute(org, { tool_name: 'shared', args: { text: 'x' } })).func_return).toBe('x');
  });

  it('refuses a custom tools.upsert over an MCP tool of the same name (TOOL_NAME_CONFLICT)', async () => {
    const org = uniqueOrg('mcp-conflict');
    const f = await fake((s) => (s.tools = [echoTool('remote_only')]));
    const added = ok(await add(org, { name: 'owner', transport: 'streamable_http', url: f.url }));
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: pythonTool('remote_only', 'return "custom"') },
    });
    expect(r.error).toMatchObject({
      code: 'TOOL_NAME_CONFLICT',
      retryable: false,
      details: { tool: 'remote_only', tool_type: 'external_mcp' },
    });
    const [tool] = await toolsOf(org, 'mcp:owner');
    expect(tool).toMatchObject({
      name: 'remote_only',
      tool_type: 'external_mcp',
      metadata_: { mcp: { server_id: added.server.id } },
    });
    expect((await execute(org, { tool_name: 'remote_only', args: { text: 'still mcp' } })).func_return).toBe(
      'still mcp',
    );
  });

  it('rebuilds an expired Streamable HTTP session (404) and retries the call', async () => {
    const org = uniqueOrg('mcp-404');
    const f = await fake((s) => (s.tools = [echoTool('ping')]));
    ok(await add(org, { name: 'forgetful', transport: 'streamable_http', url: f.url }));
    expect((await execute(org, { tool_name: 'ping', args: { text: '1' } })).func_return).toBe('1');
    const before = f.observed.sessions;
    f.forgetSessions();
    expect((await execute(org, { tool_name: 'ping', args: { text: '2' } })).func_return).toBe('2');
    expect(f.observed.sessions).toBe(before + 1);
  });

  it('reaches a server by host name (localhost, development profile): calls go to the vetted address with the name as Host', async () => {
    const org = uniqueOrg('mcp-byname');
    const f = await fake((s) => (s.tools = [echoTool('named')]));
    const url = `http://localhost:${f.port}/mcp`;
    expect(ok(await add(org, { name: 'byname', transport: 'streamable_http', url })).sync).toMatchObject({
      added: 1,
      complete: true,
    });
    for (const text of ['a', 'b', 'c'])
      expect((await execute(org, { tool_name: 'named', args: { text } })).func_return).toBe(text);
    expect(f.observed.calls).toEqual(['named', 'named', 'named']);
    expect(f.observed.headers.host).toBe(`localhost:${f.port}`);
  });

  it('get, list, remove (with its tools), and refuses what it must', async () => {
    const org = uniqueOrg('mcp-crud');
    const f = await fake((s) => (s.tools = [echoTool('one'), echoTool('two')]));
    const added = ok(
      await add(org, {
        name: 'crud',
        transport: 'streamable_http',
        url: f.url,
        headers: { 'X-Api-Key': 'secret-value' },
        auth: { type: 'bearer', token: 'tok-123' },
      }),
    );
    expect(added.server).toMatchObject({ header_names: ['X-Api-Key'], auth_type: 'bearer' });
    expect(JSON.stringify(added)).not.toMatch(/secret-value|tok-123/);
    expect((await add(org, { name: 'crud', transport: 'streamable_http', url: f.url })).error.code).toBe(
      'MCP_SERVER_EXISTS',
    );
    expect(
      ok(await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers.map((s: any) => s.name),
    ).toEqual(['crud']);
    expect(
      ok(await client.req('toolplane.v1.mcp.servers.get', { org_id: org, id: added.server.id })).server.tool_count,
    ).toBe(2);
    expect(
      (await client.req('toolplane.v1.mcp.servers.get', { org_id: uniqueOrg('other'), id: added.server.id })).error
        .code,
    ).toBe('MCP_SERVER_NOT_FOUND');
    const metadata = await add(org, { name: 'meta', transport: 'sse', url: 'http://169.254.169.254/sse' });
    expect(metadata.error.code).toBe('MCP_URL_REFUSED');
    const down = await add(org, { name: 'down', transport: 'streamable_http', url: 'http://127.0.0.1:1/mcp' });
    expect(down.error).toMatchObject({ code: 'MCP_CONNECTION_FAILED', retryable: true });
    expect((await add(org, { name: 'nocmd', transport: 'stdio' })).error.code).toBe('CONTRACT_VIOLATION');
    const removed = ok(await client.req('toolplane.v1.mcp.servers.remove', { org_id: org, name: 'crud' }));
    expect(removed).toEqual({ removed: true, tools_removed: 2 });
    expect(await toolsOf(org, 'mcp:crud')).toEqual([]);
    expect(ok(await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
  });
});
