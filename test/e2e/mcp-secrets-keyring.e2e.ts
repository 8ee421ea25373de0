import { sealAead } from '@toolplane/crypto';
import { Client } from 'pg';
import { testPrefix, uniqueOrg } from '../support/context';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { LEGACY_MCP_KEY } from '../support/stack';

/**
 * MCP server secrets live under the credentials key ring: mcp-sync stores blobs the credentials
 * service sealed (bound to org and server), and rows sealed before with MCP_ENCRYPTION_KEY are read
 * once more and sealed again under the ring's active key.
 */
describe('MCP server secrets on the credentials key ring', () => {
  let client: RawClient;
  let db: Client;
  const fakes: FakeMcpServer[] = [];
  const ok = <T = any>(r: any): T => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r as T;
  };
  const sealedOf = async (id: string): Promise<Buffer> =>
    (await db.query('SELECT sealed_secrets FROM mcp.servers WHERE id = $1', [id])).rows[0].sealed_secrets as Buffer;

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    db = new Client({ connectionString: process.env.TOOLPLANE_TEST_DATABASE_URL });
    await db.connect();
  });
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.stop()));
    await db.end();
    await client.close();
  });

  async function bearerServer(token: string): Promise<FakeMcpServer> {
    const f = new FakeMcpServer();
    f.tools = [echoTool('kr_echo')];
    f.requireAuthorization = `Bearer ${token}`;
    fakes.push(await f.start());
    return f;
  }

  it('stores only what the key ring sealed: its key id, no plaintext, and a blob that opens for its own row only', async () => {
    const org = uniqueOrg('mcp-kr');
    const f = await bearerServer('kr-token-0123456789');
    const r = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        {
          org_id: org,
          server: {
            name: 'kr',
            transport: 'streamable_http',
            url: f.url,
            auth: { type: 'bearer', token: 'kr-token-0123456789' },
            headers: { 'X-Key': 'kr-header-secret' },
          },
        },
        { timeoutMs: 30_000 },
      ),
    );
    const blob = await sealedOf(r.server.id);
    expect(blob.subarray(0, 4).toString()).toBe('TPK1');
    expect(blob.subarray(6, 6 + blob.readUInt16BE(4)).toString()).toBe('test'); // the test ring's active key
    expect(blob.includes(Buffer.from('kr-token-0123456789'))).toBe(false);
    expect(blob.includes(Buffer.from('kr-header-secret'))).toBe(false);
    // The blob moved to another server's row does not open: that server's calls fail typed, nothing leaks.
    const other = await bearerServer('kr-token-other');
    const o = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        {
          org_id: org,
          server: {
            name: 'kr-other',
            transport: 'streamable_http',
            url: other.url,
            auth: { type: 'bearer', token: 'kr-token-other' },
          },
        },
        { timeoutMs: 30_000 },
      ),
    );
    await db.query('UPDATE mcp.servers SET sealed_secrets = $1 WHERE id = $2', [blob, o.server.id]);
    const moved = await client.req(
      'toolplane.v1.mcp.servers.sync',
      { org_id: org, name: 'kr-other' },
      { timeoutMs: 30_000 },
    );
    expect(moved.error).toMatchObject({ code: 'ENCRYPTION_KEY_MISSING', retryable: false });
    expect(JSON.stringify(moved)).not.toContain('kr-token-0123456789');
    expect(other.observed.authorizations).not.toContain('Bearer kr-token-0123456789');
  });

  it('a row sealed with the legacy MCP_ENCRYPTION_KEY is read once more and sealed again under the key ring', async () => {
    const org = uniqueOrg('mcp-kr-legacy');
    const f = await bearerServer('legacy-token-42');
    const r = ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        {
          org_id: org,
          server: {
            name: 'legacy',
            transport: 'streamable_http',
            url: f.url,
            auth: { type: 'bearer', token: 'legacy-token-42' },
          },
        },
        { timeoutMs: 30_000 },
      ),
    );
    const id = r.server.id as string;
    // As an earlier version stored it.
    const legacy = sealAead(
      Buffer.from(LEGACY_MCP_KEY, 'base64'),
      JSON.stringify({ auth: { type: 'bearer', token: 'legacy-token-42' } }),
      `mcp-server\u0000${org}\u0000${id}`,
    );
    await db.query('UPDATE mcp.servers SET sealed_secrets = $1 WHERE id = $2', [legacy, id]);
    expect((await sealedOf(id))[0]).toBe(1);
    const s = ok(
      await client.req('toolplane.v1.mcp.servers.sync', { org_id: org, name: 'legacy' }, { timeoutMs: 30_000 }),
    );
    expect(s.server.last_sync).toMatchObject({ ok: true });
    expect(f.observed.authorizations.at(-1)).toBe('Bearer legacy-token-42');
    const resealed = await sealedOf(id);
    expect(resealed.subarray(0, 4).toString()).toBe('TPK1');
    const call = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'kr_echo', args: { text: 'still here' } },
      { timeoutMs: 30_000 },
    );
    expect(call).toMatchObject({ status: 'success', func_return: 'still here' });
  });
});
