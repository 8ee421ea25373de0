import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode as McpErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { context, propagation } from '@opentelemetry/api';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import type { PinnedHttp } from '@toolplane/platform';
import { SandboxedStdioTransport } from './sandboxed-stdio.transport';
import type { StdioPolicy } from './stdio-policy';

/** A server's connection settings with every template resolved: only ever held in memory. */
export interface ResolvedTarget {
  name: string;
  transport: 'stdio' | 'sse' | 'streamable_http';
  command: string | null;
  args: string[];
  env: Record<string, string>;
  url: string | null;
  headers: Record<string, string>;
  /** The Authorization header value for each HTTP request (bearer or a fresh OAuth token). */
  authorization?: () => Promise<string | undefined>;
  /** OAuth: the server challenged a request (401/403 + WWW-Authenticate): the value to retry it once with, or a typed error. */
  onChallenge?: (res: Response, sent: string | undefined) => Promise<string>;
}

export interface OpenOptions {
  connectTimeoutMs: number;
  initializeTimeoutMs: number;
  /** HTTP pinned to the vetted addresses of the server (sse, streamable_http); the connection owns it and closes it. */
  http?: PinnedHttp;
  /** How stdio servers may run (allowlist, sandbox). */
  stdio?: StdioPolicy;
  onListChanged: () => void;
  onClose: () => void;
}

/** How mcp-sync introduces itself to MCP servers. */
export const CLIENT_INFO = { name: 'toolplane-mcp-sync', version: '0.1.0' };
const STDERR_TAIL = 4096;

/** One live, initialized MCP session. */
export class McpClientConnection {
  inFlight = 0;
  lastUsed = Date.now();
  closed = false;

  private constructor(
    readonly client: Client,
    private readonly transport: Transport,
    readonly stderrTail: () => string,
    private readonly http?: PinnedHttp,
  ) {}

  /**
   * Starts the transport (bounded by connectTimeoutMs: process spawn, SSE stream, ...) and runs
   * the initialize handshake (bounded by initializeTimeoutMs). Anything else fails with
   * MCP_CONNECTION_FAILED, and the half-open transport is closed.
   */
  static async open(target: ResolvedTarget, opts: OpenOptions): Promise<McpClientConnection> {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => opts.onListChanged());
    let stderr = '';
    const transport = makeTransport(target, opts, (chunk) => (stderr = (stderr + chunk).slice(-STDERR_TAIL)));
    const start = transport.start.bind(transport);
    transport.start = () =>
      withTimeout(
        start(),
        opts.connectTimeoutMs,
        () => `connecting to ${target.name} (${target.transport}) took longer than ${opts.connectTimeoutMs} ms`,
      );
    const conn = new McpClientConnection(client, transport, () => stderr, opts.http);
    client.onclose = () => {
      conn.closed = true;
      void opts.http?.close();
      opts.onClose();
    };
    try {
      await client.connect(transport, { timeout: opts.initializeTimeoutMs });
    } catch (e) {
      conn.closed = true;
      await transport.close().catch(() => undefined);
      await opts.http?.close();
      if (e instanceof ToolplaneError) throw e;
      const timedOut = e instanceof McpError && e.code === McpErrorCode.RequestTimeout;
      const detail = timedOut ? `initialize took longer than ${opts.initializeTimeoutMs} ms` : describe(e);
      const tail = stderr.trim() ? ` (stderr: ${stderr.trim().slice(-300)})` : '';
      throw new ToolplaneError(
        ErrorCode.MCP_CONNECTION_FAILED,
        `Cannot connect to MCP server ${target.name}: ${detail}${tail}`,
        { server: target.name, transport: target.transport },
      );
    }
    return conn;
  }

  /** Tracks use (for the pool) around one request. */
  async use<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    this.inFlight += 1;
    this.lastUsed = Date.now();
    try {
      return await fn(this.client);
    } finally {
      this.inFlight -= 1;
      this.lastUsed = Date.now();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close().catch(() => undefined);
    await this.http?.close();
  }
}

/** True when the server no longer knows the session (Streamable HTTP 404): a fresh session is needed, and the request never ran. */
export function isSessionExpired(e: unknown): boolean {
  return (
    (e instanceof StreamableHTTPError && e.code === 404) ||
    (e instanceof Error && /\b404\b/.test(e.message) && /session/i.test(e.message))
  );
}

export function describe(e: unknown): string {
  if (e instanceof Error) {
    // A ToolplaneError's cause is what it wraps, already told in its message.
    const cause =
      e instanceof ToolplaneError ? undefined : (e as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ? `${e.message} (${cause.code})` : e.message;
  }
  return String(e);
}

function makeTransport(t: ResolvedTarget, opts: OpenOptions, onStderr: (chunk: string) => void): Transport {
  const http = opts.http;
  if (t.transport === 'stdio') {
    const stdio = opts.stdio;
    if (!stdio) throw new ToolplaneError(ErrorCode.MCP_TRANSPORT_DISABLED, 'stdio MCP servers are not configured here');
    return new SandboxedStdioTransport(() => stdio.spawnSpec(t.command!, t.args, t.env), onStderr);
  }
  if (!http) throw new Error(`${t.transport} transport without pinned HTTP`);
  const url = new URL(t.url!);
  const fetch = pinnedFetch(http, t.authorization, t.onChallenge);
  const requestInit = { headers: t.headers };
  if (t.transport === 'sse') return new SSEClientTransport(url, { fetch, requestInit });
  return new StreamableHTTPClientTransport(url, {
    fetch,
    requestInit,
    reconnectionOptions: {
      maxRetries: 2,
      initialReconnectionDelay: 500,
      maxReconnectionDelay: 5000,
      reconnectionDelayGrowFactor: 2,
    },
  });
}

/**
 * Every HTTP request: to the server's vetted addresses only (SSRF, redirect targets too: see
 * PinnedHttp), W3C trace context, the current Authorization.
 */
function pinnedFetch(
  http: PinnedHttp,
  authorization?: () => Promise<string | undefined>,
  onChallenge?: ResolvedTarget['onChallenge'],
) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    propagation.inject(context.active(), headers, { set: (h, k, v) => h.set(k, v) });
    const auth = await authorization?.();
    if (auth) headers.set('authorization', auth);
    const res = await http.fetch(input, { ...init, headers });
    if (!onChallenge || (res.status !== 401 && res.status !== 403) || !res.headers.get('www-authenticate')) return res;
    // Refreshed, a new grant or a step-up token: the request is sent once more, never in a loop.
    const next = await onChallenge(res, auth);
    await res.body?.cancel().catch(() => undefined);
    headers.set('authorization', next);
    return http.fetch(input, { ...init, headers });
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, message())), ms);
  });
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}
