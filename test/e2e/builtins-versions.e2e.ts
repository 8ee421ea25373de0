/**
 * Built-ins follow the deployed version: a registry that starts raises every org's older built-in
 * rows to its own version (same ids, tool events published), touches nothing already current,
 * and never a tenant's own tool that held a built-in's name before built-ins existed.
 */
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startApp, stopProcess, type RunningApp } from '../support/stack';

describe('built-in versions across deploys', () => {
  let client: RawClient;
  let db: Client;
  let second: RunningApp | undefined;
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const get = async (org: string, name: string) =>
    ok(await client.req('toolplane.v1.tools.get', { org_id: org, name }, { timeoutMs: 30_000 })).tool;
  const row = async (org: string, name: string) =>
    (
      await db.query(
        `SELECT id, tool_type, description, metadata, updated_at FROM registry.tools WHERE org_id = $1 AND name = $2`,
        [org, name],
      )
    ).rows[0];

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
  });
  afterAll(async () => {
    if (second) await stopProcess(second.proc);
    await db?.end();
    await client?.close();
  });

  it('a starting registry raises older rows in every org, keeps current ones and tenants’ own tools', async () => {
    const [a, b, c] = [uniqueOrg('ver-a'), uniqueOrg('ver-b'), uniqueOrg('ver-c')];
    const current = await get(a, 'run_code');
    const currentB = await get(b, 'web_search');
    const untouched = await row(a, 'send_message');
    // As a previous deploy left them: older schema, lower version.
    for (const [org, name] of [
      [a, 'run_code'],
      [b, 'web_search'],
    ] as const) {
      await db.query(
        `UPDATE registry.tools SET description = 'old', json_schema = $3::json, metadata = '{"builtin":{"version":0}}'::json WHERE org_id = $1 AND name = $2`,
        [
          org,
          name,
          JSON.stringify({ name, description: 'old', parameters: { type: 'object', properties: {}, required: [] } }),
        ],
      );
    }
    // An org whose tenant registered its own fetch_webpage before built-ins existed.
    await db.query(
      `INSERT INTO registry.tools (id, org_id, name, tool_type, source_type, source_code, json_schema) VALUES ($1, $2, 'fetch_webpage', 'custom', 'python', 'def fetch_webpage(url: str) -> str:\n    return url\n', '{"name":"fetch_webpage"}'::json)`,
      [
        'tool-00000000-0000-4000-8000-' +
          Math.floor(Math.random() * 1e12)
            .toString()
            .padStart(12, '0'),
        c,
      ],
    );

    second = await startApp('registry', { prefix: testPrefix(), databaseUrl: testDatabaseUrl() });

    for (const [org, name, before] of [
      [a, 'run_code', current],
      [b, 'web_search', currentB],
    ] as const) {
      const raised = await row(org, name);
      expect(raised).toMatchObject({
        id: before.id,
        tool_type: 'letta_builtin',
        description: before.description,
        metadata: before.metadata_,
      });
      expect(await get(org, name)).toEqual(before);
    }
    expect((await row(a, 'send_message')).updated_at).toEqual(untouched.updated_at);

    const own = await get(c, 'fetch_webpage');
    expect(own).toMatchObject({ tool_type: 'custom', source_code: expect.stringContaining('return url') });
    // The org still gets every other built-in.
    expect((await get(c, 'run_code')).tool_type).toBe('letta_builtin');
    const del = await client.req('toolplane.v1.tools.delete', { org_id: c, id: own.id }, { timeoutMs: 30_000 });
    expect(del).toEqual({ deleted: true });
  });
});
