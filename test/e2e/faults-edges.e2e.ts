/**
 * Fault suite, the edges (issue 19): MCP servers that accept a connection and never answer (the
 * reference's hang, letta #3373) or die mid-call, and a credentials webhook that is slow or down
 * under fail_mode open and closed. The stack is this file's (its own subject prefix, short MCP
 * timeouts); each scenario asserts what the caller saw and what was stored, and writes a report row.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { Client } from 'pg';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { eventually } from '../support/executions';
import { perScenario, repeatScenario, sawOf } from '../support/faults';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { freePort, startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { json, WebhookServer } from '../support/webhook-server';

const SIGNING = 'whsec-faults-signing-secret-01';
const MCP_ERRORS = /^(EXECUTION_TIMEOUT|MCP_CONNECTION_FAILED|MCP_TOOL_UNAVAILABLE|REQUEST_TIMEOUT)$/;

/** A TCP server on loopback that accepts every connection and never writes a byte. */
async function blackHole(port = 0): Promise<{ port: number; accepted: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('faults: MCP servers that hang or die, a credentials webhook slow or down', () => {
  const prefix = `${testPrefix()}fe`;
  const hooks = new WebhookServer(SIGNING);
  let stack: Stack;
  let client: RawClient;
  let db: Client;

  const execute = (org: string, body: Record<string, unknown>, timeoutMs = 30_000) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs }).catch((e: Error) => e);
  const recordOf = async (org: string, key: string) =>
    (
      await db.query('SELECT status, error_code FROM executor.executions WHERE org_id = $1 AND idempotency_key = $2', [
        org,
        key,
      ])
    ).rows[0] as { status: string; error_code: string | null } | undefined;
  const stored = async (org: string, key: string) => {
    const rec = await eventually(
      () => recordOf(org, key),
      (r) => r !== undefined && r.status !== 'running' && r.status !== 'queued',
      30_000,
    );
    return `record ${rec!.status}${rec!.error_code ? `/${rec!.error_code}` : ''}`;
  };
  const codeOf = (r: any): string => r?.error?.code ?? (r instanceof Error ? r.name : 'none');

  beforeAll(async () => {
    await hooks.start();
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'mcp-sync'],
      env: { LOG_LEVEL: 'warn' },
      readyTimeoutMs: 120_000,
      // Short enough for a black hole to fail fast, long enough for a healthy server on a busy box.
      appEnv: {
        'mcp-sync': {
          MCP_CONNECT_TIMEOUT_MS: '5000',
          MCP_INITIALIZE_TIMEOUT_MS: '5000',
          MCP_LIST_TIMEOUT_MS: '5000',
          MCP_RECONNECT_BASE_MS: '50',
          MCP_RECONNECT_MAX_MS: '500',
        },
      },
    });
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    client = await RawClient.connect(prefix);
  }, 240_000);
  afterAll(async () => {
    await client?.close();
    await db?.end();
    await stack?.stop();
    await hooks.stop();
  }, 60_000);

  it(
    'an MCP server that accepts the connection and never answers: typed errors in time, the pool recovers',
    async () => {
      await repeatScenario('MCP server accepts, never answers', async () => {
        const org = uniqueOrg('mcp-hang');
        // Adding a black hole: the caller gets a typed error by the connect/initialize timeout, not a hang.
        const hole = await blackHole();
        const added = await client
          .req(
            'toolplane.v1.mcp.servers.add',
            {
              org_id: org,
              server: { name: 'hole', transport: 'streamable_http', url: `http://127.0.0.1:${hole.port}/mcp` },
            },
            { timeoutMs: 20_000 },
          )
          .catch((e: Error) => e);
        expect(added).not.toBeInstanceOf(Error);
        const addSaw = added.error
          ? `add: error ${added.error.code}`
          : `add: sync ok=${added.server?.last_sync?.ok} ${added.sync?.errors?.[0]?.code ?? ''}`;
        expect(added.error?.code ?? added.sync?.errors?.[0]?.code).toMatch(/^MCP_CONNECTION_FAILED$/);
        expect(hole.accepted()).toBeGreaterThan(0);
        await hole.close();

        // A working server whose one tool hangs, and whose process later turns into a black hole.
        const f = new FakeMcpServer();
        f.tools = [
          echoTool('echo'),
          {
            def: { name: 'hang', description: 'Never answers.', inputSchema: { type: 'object', properties: {} } },
            handler: () => new Promise(() => undefined),
          },
        ];
        await f.start();
        try {
          const ok = await client.call(
            'toolplane.v1.mcp.servers.add',
            { org_id: org, server: { name: 'flaky', transport: 'streamable_http', url: f.url } },
            20_000,
          );
          expect(ok.sync).toMatchObject({ added: 2 });
          const hungKey = randomUUID();
          const hung = await execute(org, { tool_name: 'hang', args: {}, timeout_ms: 1000, idempotency_key: hungKey });
          expect(codeOf(hung)).toMatch(MCP_ERRORS);
          const hungStored = await stored(org, hungKey);
          const afterHang = await execute(org, { tool_name: 'echo', args: { text: 'still here' } });
          expect(afterHang).toMatchObject({ status: 'success', func_return: 'still here' });

          // The server's port now accepts and never answers: calls fail typed, in time.
          const port = f.port;
          await f.stop();
          const hole2 = await blackHole(port);
          const key = randomUUID();
          const dark = await execute(org, {
            tool_name: 'echo',
            args: { text: 'x' },
            timeout_ms: 1500,
            idempotency_key: key,
          });
          expect(codeOf(dark)).toMatch(MCP_ERRORS);
          const darkStored = await stored(org, key);
          await hole2.close();
          // The server is back on its port: the pool reconnects and calls succeed again.
          f.forgetSessions();
          await f.start(port);
          const back = await eventually(
            () => execute(org, { tool_name: 'echo', args: { text: 'back' }, timeout_ms: 3000 }),
            (r: any) => r?.status === 'success',
            30_000,
            200,
          );
          expect(back.func_return).toBe('back');
          return {
            saw: `${addSaw}; hanging tool ${sawOf(hung)}; black-holed server ${sawOf(dark)}; then ${sawOf(back)}`,
            stored: `hanging call ${hungStored}; black-holed call ${darkStored}; pool reconnected`,
          };
        } finally {
          await f.stop();
        }
      });
    },
    perScenario(180_000),
  );

  it(
    'an MCP server that dies mid-call: a typed error, and calls succeed once it is back',
    async () => {
      await repeatScenario('MCP server dies mid-call', async () => {
        const org = uniqueOrg('mcp-die');
        const f = new FakeMcpServer();
        let dying: Promise<void> | undefined;
        f.tools = [
          echoTool('echo'),
          {
            def: {
              name: 'die',
              description: 'The server dies while running it.',
              inputSchema: { type: 'object', properties: {} },
            },
            handler: () => ((dying = f.stop()), new Promise(() => undefined)),
          },
        ];
        await f.start();
        const port = f.port;
        try {
          await client.call(
            'toolplane.v1.mcp.servers.add',
            { org_id: org, server: { name: 'mortal', transport: 'streamable_http', url: f.url } },
            20_000,
          );
          const key = randomUUID();
          const died = await execute(org, { tool_name: 'die', args: {}, timeout_ms: 5000, idempotency_key: key });
          expect(codeOf(died)).toMatch(MCP_ERRORS);
          const diedStored = await stored(org, key);
          await dying;
          const down = await execute(org, { tool_name: 'echo', args: { text: 'x' }, timeout_ms: 2000 });
          expect(codeOf(down)).toMatch(MCP_ERRORS);
          f.forgetSessions();
          await f.start(port);
          const back = await eventually(
            () => execute(org, { tool_name: 'echo', args: { text: 'back' }, timeout_ms: 3000 }),
            (r: any) => r?.status === 'success',
            30_000,
            200,
          );
          return {
            saw: `mid-call ${sawOf(died)}; while down ${sawOf(down)}; after restart ${sawOf(back)}`,
            stored: `died call ${diedStored}; pool reconnected`,
          };
        } finally {
          await f.stop();
        }
      });
    },
    perScenario(180_000),
  );

  it(
    'a credentials webhook slow or down: fail_mode closed fails typed and retryable, open runs without it',
    async () => {
      const org = uniqueOrg('hook');
      await client.call(
        'toolplane.v1.tools.upsert',
        {
          org_id: org,
          tool: { source_code: pythonTool('hooked', 'import os\nreturn os.environ.get("HOOKED", "none")') },
        },
        30_000,
      );
      hooks.route('/slow', async (_h, res) => {
        await new Promise((r) => setTimeout(r, 3000).unref());
        json(res, 200, { env: { HOOKED: 'late' } });
      });
      // Down: a loopback port nothing listens on (taken, then freed).
      const downUrl = `http://127.0.0.1:${await freePort()}/hook`;
      const cases = [
        { what: 'slow', url: hooks.url('/slow') },
        { what: 'down', url: downUrl },
      ];
      for (const c of cases) {
        for (const failMode of ['closed', 'open'] as const) {
          await repeatScenario(`credentials webhook ${c.what}, fail_mode ${failMode}`, async () => {
            await client.call(
              'toolplane.v1.webhooks.set',
              { org_id: org, url: c.url, signing_secret: SIGNING, timeout_ms: 400, fail_mode: failMode },
              20_000,
            );
            const key = randomUUID();
            const r = await execute(org, { tool_name: 'hooked', args: {}, idempotency_key: key }, 20_000);
            if (failMode === 'closed')
              expect(r).toMatchObject({ error: { code: 'CREDENTIALS_UNAVAILABLE', retryable: true } });
            else expect(r).toMatchObject({ status: 'success', func_return: 'none' });
            return {
              saw: sawOf(r),
              stored: await stored(org, key).catch(() => 'no execution record (refused before the run)'),
            };
          });
        }
      }
    },
    perScenario(180_000),
  );
});
