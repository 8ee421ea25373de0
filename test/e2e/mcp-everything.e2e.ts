import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { everythingStdio, memoryStdio, startEverythingHttp } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';

/** mcp-sync against the reference servers from npm, over each transport. */
describe('MCP sync with the npm reference servers', () => {
  let client: RawClient;
  const stops: Array<() => Promise<void>> = [];
  let sse: string;
  let streamable: string;
  let memoryDir: string;
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const execute = (org: string, body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 30_000 });
  const namesOf = async (org: string, server: string): Promise<string[]> =>
    ok(await client.req('toolplane.v1.tools.list', { org_id: org, tags: [`mcp:${server}`], limit: 200 })).tools.map(
      (t: any) => t.name,
    );

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    const [a, b] = await Promise.all([startEverythingHttp('sse'), startEverythingHttp('streamableHttp')]);
    stops.push(a.stop, b.stop);
    sse = a.url;
    streamable = b.url;
    memoryDir = mkdtempSync(join(tmpdir(), 'tp-mcp-memory-'));
  });
  afterAll(async () => {
    await Promise.all(stops.map((s) => s()));
    rmSync(memoryDir, { recursive: true, force: true });
    await client.close();
  });

  it.each([
    ['stdio', () => ({ transport: 'stdio', ...everythingStdio })],
    ['sse', () => ({ transport: 'sse', url: sse })],
    ['streamable_http', () => ({ transport: 'streamable_http', url: streamable })],
  ])('syncs server-everything over %s and runs echo and get-sum through tools.execute', async (transport, server) => {
    const org = uniqueOrg(`every-${transport.replace('_', '-')}`);
    const name = `everything-${transport.replace('_', '-')}`;
    const r = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name, ...server() } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(r.server.transport).toBe(transport);
    expect(r.sync.added).toBeGreaterThanOrEqual(10);
    expect(r.sync.complete).toBe(true);
    expect(r.sync.added + r.sync.errors.length).toBe(r.sync.listed);
    expect(await namesOf(org, name)).toEqual(
      expect.arrayContaining(['echo', 'get-sum', 'trigger-long-running-operation', 'get-tiny-image']),
    );
    expect(await execute(org, { tool_name: 'echo', args: { message: `hi over ${transport}` } })).toMatchObject({
      status: 'success',
      func_return: `Echo: hi over ${transport}`,
      provider: 'mcp',
    });
    expect((await execute(org, { tool_name: 'get-sum', args: { a: 2, b: 3 } })).func_return).toBe(
      'The sum of 2 and 3 is 5.',
    );
    const removed = ok(await client.req('toolplane.v1.mcp.servers.remove', { org_id: org, name }));
    expect(removed.tools_removed).toBe(r.server.tool_count);
    expect(await namesOf(org, name)).toEqual([]);
  });

  it('maps images and structured content, and lets progress notifications keep a long operation alive', async () => {
    const org = uniqueOrg('every-content');
    ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'everything', transport: 'streamable_http', url: streamable } },
        { timeoutMs: 30_000 },
      ),
    );
    const image = await execute(org, { tool_name: 'get-tiny-image', args: {} });
    expect(image.status).toBe('success');
    expect(image.func_return.text).toBe("Here's the image you requested:\nThe image above is the MCP logo.");
    expect(image.func_return.content[1]).toEqual({
      type: 'image',
      mime_type: 'image/png',
      data: expect.stringMatching(/^iVBOR/),
    });
    const weather = await execute(org, { tool_name: 'get-structured-content', args: { location: 'Chicago' } });
    expect(weather.func_return).toEqual({ temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 });
    // 2 s of work, a progress notification every 250 ms, a 900 ms timeout: progress keeps it alive.
    const long = await execute(org, {
      tool_name: 'trigger-long-running-operation',
      args: { duration: 2, steps: 8 },
      timeout_ms: 900,
    });
    expect(long).toMatchObject({
      status: 'success',
      func_return: 'Long running operation completed. Duration: 2 seconds, Steps: 8.',
    });
    // One step of 2 s with the same timeout: no progress in time, so it is cut and cancelled.
    const cut = await execute(org, {
      tool_name: 'trigger-long-running-operation',
      args: { duration: 2, steps: 1 },
      timeout_ms: 900,
    });
    expect(cut.error.code).toBe('EXECUTION_TIMEOUT');
  });

  it('keeps a knowledge graph with server-memory over stdio, in its sandbox (MEMORY_FILE_PATH in the sandbox /tmp, never on the host)', async () => {
    const org = uniqueOrg('memory');
    // The sandbox has its own /tmp: the server's file lives there, never in the host's /tmp.
    const file = join('/tmp', `tp-memory-${Math.random().toString(36).slice(2)}.jsonl`);
    const r = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'memory', transport: 'stdio', ...memoryStdio(file) } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(r.server.env_keys).toEqual(['MEMORY_FILE_PATH']);
    expect(await namesOf(org, 'memory')).toEqual(
      expect.arrayContaining(['create_entities', 'read_graph', 'search_nodes']),
    );
    const created = await execute(org, {
      tool_name: 'create_entities',
      args: { entities: [{ name: 'Toolplane', entityType: 'project', observations: ['rebuilds the tool plane'] }] },
    });
    expect(created.status).toBe('success');
    const graph = await execute(org, { tool_name: 'read_graph', args: {} });
    expect(JSON.stringify(graph.func_return)).toContain('rebuilds the tool plane');
    expect(existsSync(file)).toBe(false);
  });
});
