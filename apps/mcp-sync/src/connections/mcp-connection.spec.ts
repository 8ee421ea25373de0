import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpClientConnection, type ResolvedTarget } from './mcp-connection';
import { PinnedHttp, UrlGuard } from '@toolplane/platform';

/** An echo MCP server on 127.0.0.1 speaking Streamable HTTP (/mcp) and SSE (/sse + /messages); records Host headers. */
async function startServer(): Promise<{ port: number; hosts: string[]; stop: () => Promise<void> }> {
  const hosts: string[] = [];
  const streams = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  const mcp = () => {
    const s = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
    }));
    s.setRequestHandler(CallToolRequestSchema, async (req) => ({
      content: [{ type: 'text', text: String(req.params.arguments?.text) }],
    }));
    return s;
  };
  const http: HttpServer = createServer((req, res) => {
    hosts.push(req.headers.host ?? '');
    const url = new URL(req.url ?? '/', 'http://x');
    void (async () => {
      if (url.pathname === '/sse') {
        const t = new SSEServerTransport('/messages', res);
        sse.set(t.sessionId, t);
        await mcp().connect(t);
      } else if (url.pathname === '/messages') {
        await sse.get(url.searchParams.get('sessionId') ?? '')?.handlePostMessage(req, res);
      } else {
        const sid = req.headers['mcp-session-id'];
        let t = typeof sid === 'string' ? streams.get(sid) : undefined;
        if (!t) {
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => void streams.set(id, created),
          });
          await mcp().connect(created);
          t = created;
        }
        await t.handleRequest(req, res);
      }
    })();
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  return {
    port: (http.address() as AddressInfo).port,
    hosts,
    stop: async () => {
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}

describe('McpClientConnection over pinned HTTP', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.stop());

  for (const [transport, path] of [
    ['streamable_http', '/mcp'],
    ['sse', '/sse'],
  ] as const) {
    it(`${transport}: every request of a session goes to the address vetted at open, one lookup in all`, async () => {
      // The name exists only in this resolver: a request that bypassed the pinned fetch could not connect.
      const lookups: string[] = [];
      const resolve = async (host: string) => {
        lookups.push(host);
        return host === 'mcp.pinned.test' ? (lookups.length === 1 ? ['127.0.0.1'] : ['169.254.169.254']) : [];
      };
      const http = new PinnedHttp(new UrlGuard({ profile: 'development', allowed: [], resolve }));
      const target: ResolvedTarget = {
        name: 'echo',
        transport,
        command: null,
        args: [],
        env: {},
        url: `http://mcp.pinned.test:${server.port}${path}`,
        headers: {},
      };
      await http.vet(target.url!);
      server.hosts.length = 0;
      const conn = await McpClientConnection.open(target, {
        connectTimeoutMs: 5000,
        initializeTimeoutMs: 5000,
        http,
        onListChanged: () => undefined,
        onClose: () => undefined,
      });
      try {
        for (let i = 0; i < 5; i++) {
          const r = await conn.use((c) => c.callTool({ name: 'echo', arguments: { text: `hi ${i}` } }));
          expect(r.content).toEqual([{ type: 'text', text: `hi ${i}` }]);
        }
        expect((await conn.use((c) => c.listTools())).tools.map((t) => t.name)).toEqual(['echo']);
      } finally {
        await conn.close();
      }
      expect(lookups).toEqual(['mcp.pinned.test']);
      // initialize, initialized, 5 calls, 1 list at least; each with the original Host.
      expect(server.hosts.length).toBeGreaterThanOrEqual(8);
      expect(new Set(server.hosts)).toEqual(new Set([`mcp.pinned.test:${server.port}`]));
      // Closing the session closes its sockets and forgets the pins.
      expect(http.pinned('mcp.pinned.test')).toEqual([]);
    });
  }
});
