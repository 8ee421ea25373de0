/**
 * MCP servers for tests and benchmarks: an in-process SDK server on a loopback HTTP port
 * (Streamable HTTP, stateful sessions) whose tool list, paging and behaviour a test controls, and
 * the npm reference servers (server-everything, server-memory) as child processes.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { freePort, stopProcess } from './stack';
import { stdioFixture } from './stdio-allowlist';

/** `authorization` and `headers`: those of the HTTP request that carried this tools/call. */
export type ToolHandler = (
  args: Record<string, unknown>,
  extra: {
    signal: AbortSignal;
    progress: (p: number, total?: number) => Promise<void>;
    authorization?: string;
    headers?: Record<string, string | string[] | undefined>;
  },
) => Promise<unknown>;

export interface FakeTool {
  /** Sent as is in tools/list: malformed entries are allowed on purpose. */
  def: Record<string, unknown>;
  handler?: ToolHandler;
}

/** What the server saw, for assertions. */
export interface Observed {
  listCalls: number;
  cancelled: string[];
  calls: string[];
  sessions: number;
  /** The headers of the latest HTTP request. */
  headers: Record<string, string | string[] | undefined>;
  /** Every Authorization header sent, in order (none: absent). */
  authorizations: string[];
}

/**
 * A stateful MCP server of the SDK over Streamable HTTP on a loopback port, for tests: its HTTP
 * server, its sessions (one SDK Server each) and their lifetime; a subclass answers requests.
 */
export abstract class LoopbackMcpServer {
  protected http?: HttpServer;
  protected readonly sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  /** `port`: listen again on the port of a stopped run (a restart). */
  async start(port = 0): Promise<this> {
    this.http = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.http!.listen(port, '127.0.0.1', () => r()));
    this.port = (this.http.address() as { port: number }).port;
    return this;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.server.close().catch(() => undefined)));
    this.sessions.clear();
    this.http?.closeAllConnections();
    await new Promise((r) => this.http?.close(r));
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export class FakeMcpServer extends LoopbackMcpServer {
  tools: FakeTool[] = [];
  pageSize = 0;
  /** Each tools/list page answers after this long (a slow listing). */
  listDelayMs = 0;
  /** When set, every request must carry exactly this Authorization header (else 401). */
  requireAuthorization?: string;
  /** When set, decides which Authorization headers are accepted (else 401). */
  acceptAuthorization?: (header: string | undefined) => boolean;
  /** The WWW-Authenticate of a 401 (an OAuth-protected server: resource_metadata, scope). */
  wwwAuthenticate?: string;
  /** Documents served at GET /.well-known/... (Protected Resource Metadata). */
  wellKnown: Record<string, unknown> = {};
  readonly observed: Observed = {
    listCalls: 0,
    cancelled: [],
    calls: [],
    sessions: 0,
    headers: {},
    authorizations: [],
  };

  /** tools/list_changed to every connected client. */
  async notifyListChanged(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.server.sendToolListChanged().catch(() => undefined)));
  }

  /** The server forgets every session: the next request of a client gets 404. */
  forgetSessions(): void {
    this.sessions.clear();
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (req.method === 'GET' && path.startsWith('/.well-known/')) {
      const doc = this.wellKnown[path];
      res
        .writeHead(doc ? 200 : 404, { 'content-type': 'application/json' })
        .end(JSON.stringify(doc ?? { error: 'not_found' }));
      return;
    }
    this.observed.headers = { ...req.headers };
    if (req.headers.authorization) this.observed.authorizations.push(req.headers.authorization);
    const refused = this.acceptAuthorization
      ? !this.acceptAuthorization(req.headers.authorization)
      : this.requireAuthorization !== undefined && req.headers.authorization !== this.requireAuthorization;
    if (refused) {
      res
        .writeHead(401, {
          'content-type': 'application/json',
          ...(this.wwwAuthenticate ? { 'www-authenticate': this.wwwAuthenticate } : {}),
        })
        .end(JSON.stringify({ error: 'invalid_token' }));
      return;
    }
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const s = this.sessions.get(sid);
      if (!s) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      await s.transport.handleRequest(req, res);
      return;
    }
    const server = this.makeServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.observed.sessions += 1;
        this.sessions.set(id, { transport, server });
      },
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  private makeServer(): Server {
    const server = new Server({ name: 'fake', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, async (req) => {
      this.observed.listCalls += 1;
      if (this.listDelayMs) await sleep(this.listDelayMs);
      const all = this.tools.map((t) => t.def);
      if (!this.pageSize) return { tools: all } as never;
      const offset = Number(req.params?.cursor ?? 0);
      const page = all.slice(offset, offset + this.pageSize);
      const next = offset + this.pageSize < all.length ? String(offset + this.pageSize) : undefined;
      return { tools: page, ...(next ? { nextCursor: next } : {}) } as never;
    });
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const name = req.params.name;
      this.observed.calls.push(name);
      const tool = this.tools.find((t) => t.def.name === name);
      if (!tool?.handler) return { content: [{ type: 'text', text: `Unknown tool: ${name}` }], isError: true };
      extra.signal.addEventListener('abort', () => this.observed.cancelled.push(name));
      const token = req.params._meta?.progressToken;
      const progress = async (p: number, total?: number) => {
        if (token !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: p, ...(total ? { total } : {}) },
          });
      };
      const headers = extra.requestInfo?.headers;
      const authorization = headers?.authorization;
      return (await tool.handler(req.params.arguments ?? {}, {
        signal: extra.signal,
        progress,
        ...(typeof authorization === 'string' ? { authorization } : {}),
        ...(headers ? { headers } : {}),
      })) as never;
    });
    return server;
  }
}

/** A tool with one required string parameter `text`, answering `<prefix><text>`. */
export function echoTool(name: string, prefix = ''): FakeTool {
  return {
    def: {
      name,
      description: `Echo for ${name}.`,
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', description: 'What to say.' } },
        required: ['text'],
      },
    },
    handler: async (args) => ({ content: [{ type: 'text', text: `${prefix}${String(args.text)}` }] }),
  };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** A minimal OAuth 2.1 token endpoint (client-credentials grant) on a loopback port. */
export async function startTokenServer(
  clientId: string,
  clientSecret: string,
  token: string,
): Promise<{ url: string; requests: () => number; stop: () => Promise<void> }> {
  let requests = 0;
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      requests += 1;
      const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
      const form = new URLSearchParams(body);
      if (req.headers.authorization !== basic || form.get('grant_type') !== 'client_credentials') {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_client' }));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const port = (http.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/token`,
    requests: () => requests,
    stop: () => new Promise((r) => http.close(() => r())),
  };
}

/**
 * A minimal OAuth 2.1 authorization server for a public client: `/authorize` (PKCE S256 required)
 * redirects to the redirect URI with a code; `/token` takes authorization_code (checking the
 * verifier) and refresh_token grants, issuing at-<n> / rt-<n> that expire after `expiresIn` s.
 */
export async function startAuthorizationServer(clientId: string, expiresIn: number) {
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const refresh = new Set<string>();
  const access = new Map<string, number>();
  const grants: string[] = [];
  let n = 0;
  const issue = () => {
    n += 1;
    access.set(`at-${n}`, Date.now() + expiresIn * 1000);
    refresh.add(`rt-${n}`);
    return { access_token: `at-${n}`, refresh_token: `rt-${n}`, token_type: 'Bearer', expires_in: expiresIn };
  };
  const http = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = url.searchParams;
      if (
        q.get('response_type') !== 'code' ||
        q.get('client_id') !== clientId ||
        q.get('code_challenge_method') !== 'S256' ||
        !q.get('code_challenge') ||
        !q.get('state')
      )
        return json(400, { error: 'invalid_request' });
      const code = randomUUID();
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')! });
      const to = new URL(q.get('redirect_uri')!);
      to.searchParams.set('code', code);
      to.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: to.href }).end();
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      const grant = form.get('grant_type') ?? '';
      grants.push(grant);
      if (form.get('client_id') !== clientId) return json(401, { error: 'invalid_client' });
      if (grant === 'authorization_code') {
        const c = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verified =
          c &&
          createHash('sha256')
            .update(form.get('code_verifier') ?? '')
            .digest('base64url') === c.challenge &&
          form.get('redirect_uri') === c.redirectUri;
        return verified ? json(200, issue()) : json(400, { error: 'invalid_grant' });
      }
      if (grant === 'refresh_token' && refresh.delete(form.get('refresh_token') ?? '')) return json(200, issue());
      return json(400, { error: 'invalid_grant' });
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  return {
    authorizeUrl: `${base}/authorize`,
    tokenUrl: `${base}/token`,
    grants,
    /** An unexpired access token this server issued. */
    accepts: (header: string | undefined) => {
      const exp = access.get((header ?? '').replace(/^Bearer /, ''));
      return exp !== undefined && exp > Date.now();
    },
    stop: () => new Promise<void>((r) => http.close(() => r())),
  };
}

/** How mcp-sync spawns server-everything over stdio. */
export const everythingStdio = { command: stdioFixture().node, args: [stdioFixture().everything, 'stdio'] };
export const memoryStdio = (memoryFile: string) => ({
  command: stdioFixture().node,
  args: [stdioFixture().memory],
  env: { MEMORY_FILE_PATH: memoryFile },
});
/** The spy server (test/support/stdio-spy-server.ts), asked to try reading `file`. */
export const spyStdio = (file: string) => ({ command: stdioFixture().node, args: [stdioFixture().spy, file] });

/** server-everything over SSE (`/sse`) or Streamable HTTP (`/mcp`) on a free port. */
export async function startEverythingHttp(
  mode: 'sse' | 'streamableHttp',
): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [stdioFixture().everything, mode], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server-everything ${mode} did not start: ${out}`)), 15_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (/running on port|listening on port/i.test(out)) {
        clearTimeout(t);
        resolve();
      }
    };
    proc.stderr!.on('data', onData);
    proc.stdout!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`server-everything ${mode} exited ${code}: ${out}`)));
  });
  const path = mode === 'sse' ? '/sse' : '/mcp';
  return {
    url: `http://127.0.0.1:${port}${path}`,
    proc,
    stop: () => stopProcess(proc, 'SIGTERM', 3000).then(() => undefined),
  };
}
