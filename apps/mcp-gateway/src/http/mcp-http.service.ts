import { Inject, Injectable, Logger } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  LATEST_PROTOCOL_VERSION,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { ErrorCode, ToolplaneError, ToolsetsGet } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuthRefused, type Caller } from '../auth/caller';
import { GatewayAuth, identityDigest, MCP_SCOPES } from '../auth/gateway-auth';
import { McpServerFactory } from '../mcp/mcp-server.factory';
import type { GatewayConfig } from '../mcp-gateway.config';
import { LiveSessions } from '../sessions/live-sessions';
import type { SessionRecord } from '../sessions/session';
import { endpointKey, endpointPath, type Endpoint } from '../tools/endpoint';
import { SessionStore } from '../sessions/session-store';
import { parseEventId, RequestEventStore } from '../streams/request-event-store';
import { StreamEventsRepository } from '../streams/stream-events.repository';
import { StreamResumeService } from '../streams/stream-resume.service';
import { EndpointToolsService } from '../tools/endpoint-tools.service';
import { RateLimiter } from './rate-limiter';

const tracer = trace.getTracer('mcp-gateway');
const SESSION_HEADER = 'mcp-session-id';
const PRM_PREFIX = '/.well-known/oauth-protected-resource';

/** An answer the gateway gives itself, before any MCP handling: JSON-RPC error body, plain status, headers. */
class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly rpcCode = -32000,
  ) {
    super(message);
  }
}

/**
 * One HTTP request of an MCP endpoint, from the socket to the SDK's transport: Host and Origin
 * (DNS rebinding), the bearer token, the caller's rate, the body's size, then the session — a new
 * one at initialize (its record in NATS KV before the client learns its id), else the one the
 * Mcp-Session-Id names, refused to any other identity. Requests run on the SDK's Streamable HTTP
 * transport and Server, built for this request only; the client's answers to a request another
 * replica serves are relayed to it. Errors never carry a stack or an internal address.
 *
 * Resumable streams (GATEWAY_RESUMABLE_STREAMS, see streams/): a POST's SSE events are stored in
 * JetStream as they are sent. A connection that drops is not a cancellation (the spec: the client
 * sends notifications/cancelled for that): the request goes on, its transport stays registered in
 * LiveSessions for the client's answers and cancellation, and its Server closes once every
 * request of the POST is answered. The client resumes with GET and Last-Event-ID on any replica.
 */
@Injectable()
export class McpHttpService {
  private readonly log = new Logger(McpHttpService.name);
  private readonly limiter: RateLimiter;

  constructor(
    private readonly auth: GatewayAuth,
    private readonly sessions: SessionStore,
    private readonly live: LiveSessions,
    private readonly servers: McpServerFactory,
    private readonly messaging: MessagingClient,
    private readonly streamEvents: StreamEventsRepository,
    private readonly resumes: StreamResumeService,
    private readonly endpointTools: EndpointToolsService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {
    this.limiter = new RateLimiter(config.GATEWAY_RATE_PER_SECOND, config.GATEWAY_RATE_BURST);
  }

  async handle(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint): Promise<void> {
    const parent = propagation.extract(context.active(), req.headers);
    const method = req.method ?? 'GET';
    await context.with(parent, () =>
      tracer.startActiveSpan(
        `${method} ${endpoint.kind === 'agent' ? '/mcp/agents/{agent_id}' : '/mcp/toolsets/{name}'}`,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': method, 'network.transport': 'tcp', 'mcp.endpoint.kind': endpoint.kind },
        },
        async (span) => {
          try {
            await this.serve(req, res, endpoint, span);
          } catch (e) {
            this.refuse(res, e, endpoint, req);
            span.setStatus({
              code: SpanStatusCode.ERROR,
              message: e instanceof HttpRefusal ? String(e.status) : 'error',
            });
          } finally {
            span.setAttribute('http.response.status_code', res.statusCode);
            span.end();
          }
        },
      ),
    );
  }

  /** RFC 9728 metadata of an endpoint: its resource URI, the scopes it needs, and where tokens come from. */
  protectedResourceMetadata(
    req: IncomingMessage,
    endpoint: Endpoint,
    authorizationServers: string[],
  ): Record<string, unknown> {
    return {
      resource: this.resource(req, endpoint),
      ...(authorizationServers.length ? { authorization_servers: authorizationServers } : {}),
      scopes_supported: [...MCP_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: `Toolplane ${endpoint.kind === 'agent' ? 'agent' : 'tool set'} ${endpoint.id}`,
    };
  }

  /** The endpoint's canonical URI (RFC 8707): the public base URL when configured, else this request's own. */
  resource(req: IncomingMessage, endpoint: Endpoint): string {
    return `${this.baseUrl(req)}${endpointPath(endpoint)}`;
  }

  private async serve(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint, span: Span): Promise<void> {
    this.checkHostAndOrigin(req);
    const caller = await this.auth.authenticate(req.headers.authorization, this.resource(req, endpoint));
    span.setAttribute('toolplane.org_id', caller.org);
    const wait = this.limiter.take(caller.identity);
    if (wait > 0)
      throw new HttpRefusal(429, `Too many requests for this token: retry in ${wait} s`, {
        'retry-after': String(wait),
      });
    const method = req.method ?? 'GET';
    if (method === 'POST') return this.post(req, res, caller, endpoint, span);
    if (method === 'GET' || method === 'DELETE') {
      const sessionId = this.sessionHeader(req);
      const session = await this.session(sessionId, caller, endpoint);
      span.setAttribute('mcp.session.id', identityDigest(sessionId));
      if (method === 'DELETE') {
        await this.sessions.delete(sessionId);
        res.writeHead(200).end();
        return;
      }
      return this.stream(req, res, caller, endpoint, sessionId, session);
    }
    throw new HttpRefusal(405, 'Method not allowed', { allow: 'GET, POST, DELETE' });
  }

  private async post(
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    endpoint: Endpoint,
    span: Span,
  ): Promise<void> {
    const body = await this.readJson(req);
    const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
    const init = messages.find((m) => isInitializeRequest(m));
    if (init) {
      if (messages.length > 1)
        throw new HttpRefusal(400, 'Invalid Request: an initialize request must be sent alone', {}, -32600);
      return this.initialize(
        req,
        res,
        caller,
        endpoint,
        init as JSONRPCMessage & { params: Record<string, unknown> },
        span,
      );
    }
    const sessionId = this.sessionHeader(req);
    const session = await this.session(sessionId, caller, endpoint);
    span.setAttribute('mcp.session.id', identityDigest(sessionId));
    const first = messages.find(isJSONRPCRequest);
    if (first) span.setAttribute('mcp.method.name', first.method);
    if (!messages.some(isJSONRPCRequest)) {
      // Answers to the server's requests and notifications (cancelled, initialized…): to the replica serving them.
      const relayed = messages.filter((m) => !('method' in m) || m.method === 'notifications/cancelled');
      if (relayed.length) this.live.relay(sessionId, relayed);
      res.writeHead(202).end();
      return;
    }
    const requests = messages.filter(isJSONRPCRequest);
    // A stream only where the server may speak before it answers (progress, an approval asked by
    // elicitation, a long tasks/result): the rest is answered as plain JSON — no SSE framing, no
    // stored events (the common tools/call costs two JetStream publishes less).
    const streaming =
      !this.config.GATEWAY_JSON_RESPONSES || (await this.needsStream(caller, endpoint, session, requests));
    const server = this.servers.create(caller, endpoint, session, undefined, !streaming);
    const ids = requests.map((m: JSONRPCRequest) => m.id);
    const events =
      streaming && this.config.GATEWAY_RESUMABLE_STREAMS
        ? new RequestEventStore(
            this.streamEvents,
            identityDigest(sessionId),
            ids,
            this.config.GATEWAY_STREAM_HEARTBEAT_MS,
          )
        : undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      ...(streaming ? {} : { enableJsonResponse: true }),
      ...(events ? { eventStore: events, retryInterval: this.config.GATEWAY_SSE_RETRY_MS } : {}),
    });
    const answered = events?.answered ?? answeredBy(transport, ids);
    const release = this.live.serve(sessionId, transport);
    let guard: NodeJS.Timeout | undefined;
    const end = () => {
      clearTimeout(guard);
      events?.dispose();
      release();
      void server.close().catch(() => undefined);
    };
    res.once('close', () => {
      if (streaming && !events) return end();
      // The connection is gone, maybe not the client: a disconnection is no cancellation (MCP
      // transports); serve on until answered (bounded by the longest a call and an approval may take).
      guard = setTimeout(
        end,
        this.config.GATEWAY_CALL_TIMEOUT_MS + this.config.GATEWAY_ELICITATION_TIMEOUT_MS + 60_000,
      ).unref();
      void answered.then(end);
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /** Whether the server may send anything before its answers: a progress token, an approval or an account connection it may ask for, a tasks/result that waits. */
  private async needsStream(
    caller: Caller,
    endpoint: Endpoint,
    session: SessionRecord,
    requests: JSONRPCRequest[],
  ): Promise<boolean> {
    for (const r of requests) {
      const params = (r.params ?? {}) as { name?: unknown; task?: unknown; _meta?: { progressToken?: unknown } };
      if (
        r.method === 'tools/list' ||
        r.method === 'ping' ||
        r.method === 'tasks/get' ||
        r.method === 'tasks/list' ||
        r.method === 'tasks/cancel'
      )
        continue;
      if (r.method !== 'tools/call' || params._meta?.progressToken !== undefined) return true;
      if (params.task !== undefined || !session.capabilities.elicitation) continue;
      const tool =
        typeof params.name === 'string'
          ? (await this.endpointTools.of(caller.org, endpoint)).byName.get(params.name)
          : undefined;
      // An approval to ask for, or an MCP server that may want the caller's account connected (URL elicitation).
      if (
        tool?.requiresApproval !== false ||
        (tool.tool.tool_type === 'external_mcp' && session.capabilities.elicitation?.url)
      )
        return true;
    }
    return false;
  }

  private async initialize(
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    endpoint: Endpoint,
    init: JSONRPCMessage & { params: Record<string, unknown> },
    span: Span,
  ): Promise<void> {
    span.setAttribute('mcp.method.name', 'initialize');
    const instructions = await this.instructions(caller, endpoint);
    const sessionId = SessionStore.newId();
    const params = init.params;
    const record: SessionRecord = {
      v: 1,
      org: caller.org,
      identity: caller.identity,
      user_id: caller.userId,
      endpoint: endpointKey(endpoint),
      protocol_version: typeof params.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION,
      capabilities: (params.capabilities ?? {}) as SessionRecord['capabilities'],
      client_info: (params.clientInfo ?? { name: 'unknown', version: '0' }) as SessionRecord['client_info'],
      created_at: Date.now(),
    };
    const server = this.servers.create(caller, endpoint, undefined, instructions);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      // Stored before the answer leaves: the client's next request may reach any replica.
      onsessioninitialized: (id) => this.sessions.create(id, record),
    });
    res.once('close', () => void server.close().catch(() => undefined));
    await server.connect(transport);
    await transport.handleRequest(req, res, init);
    span.setAttribute('mcp.session.id', identityDigest(sessionId));
  }

  private async stream(
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    endpoint: Endpoint,
    sessionId: string,
    session: SessionRecord,
  ): Promise<void> {
    const lastEventId = req.headers['last-event-id'];
    const from =
      this.config.GATEWAY_RESUMABLE_STREAMS && typeof lastEventId === 'string' ? parseEventId(lastEventId) : undefined;
    if (from) {
      // A POST's stream, resumed here whichever replica serves (or served) it; any other id opens a new GET stream below.
      if (!req.headers.accept?.includes('text/event-stream'))
        throw new HttpRefusal(406, 'Not Acceptable: Client must accept text/event-stream');
      trace.getActiveSpan()?.setAttribute('toolplane.mcp.stream.resumed', true);
      const outcome = await this.resumes.resume(res, identityDigest(sessionId), sessionId, from);
      trace.getActiveSpan()?.setAttribute('toolplane.mcp.stream.resume_outcome', outcome);
      return;
    }
    const server = this.servers.create(caller, endpoint, session);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const release = this.live.openStream(sessionId, { org: caller.org, endpoint: endpointKey(endpoint), server });
    res.once('close', () => {
      release();
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  /** The session a request names: 404 when it is unknown or gone (the client initializes again), 403 for another identity or endpoint. */
  private async session(sessionId: string, caller: Caller, endpoint: Endpoint): Promise<SessionRecord> {
    const session = await this.sessions.get(sessionId);
    if (!session) throw new HttpRefusal(404, 'Session not found: initialize a new session', {}, -32001);
    if (session.identity !== caller.identity || session.org !== caller.org)
      throw new HttpRefusal(403, 'This session belongs to another token', {}, -32000);
    if (session.endpoint !== endpointKey(endpoint))
      throw new HttpRefusal(404, 'Session not found on this endpoint: initialize a new session', {}, -32001);
    return session;
  }

  private sessionHeader(req: IncomingMessage): string {
    const v = req.headers[SESSION_HEADER];
    if (typeof v !== 'string' || !/^[A-Za-z0-9_-]{16,128}$/.test(v))
      throw new HttpRefusal(400, 'Bad Request: Mcp-Session-Id header is required', {}, -32000);
    return v;
  }

  /** A tool set's instructions (and proof it exists) for initialize; an agent needs none. */
  private async instructions(caller: Caller, endpoint: Endpoint): Promise<string | undefined> {
    if (endpoint.kind !== 'toolset') return undefined;
    try {
      const { toolset } = await this.messaging.request(
        ToolsetsGet,
        { org_id: caller.org, name: endpoint.id },
        { timeoutMs: 10_000 },
      );
      return [toolset.description, toolset.instructions].filter((s): s is string => !!s).join('\n\n') || undefined;
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.TOOLSET_NOT_FOUND)
        throw new HttpRefusal(404, `No tool set named ${endpoint.id}`, {}, -32002);
      throw e;
    }
  }

  private async readJson(req: IncomingMessage): Promise<unknown> {
    const max = this.config.GATEWAY_MAX_BODY_BYTES;
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max)
      throw new HttpRefusal(413, `Request body larger than ${max} bytes`, {}, -32600);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > max)
        throw new HttpRefusal(413, `Request body larger than ${max} bytes`, { connection: 'close' }, -32600);
      chunks.push(chunk as Buffer);
    }
    const type = req.headers['content-type'] ?? '';
    if (!type.includes('application/json'))
      throw new HttpRefusal(415, 'Unsupported Media Type: Content-Type must be application/json', {}, -32000);
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch {
      throw new HttpRefusal(400, 'Parse error: the body is not JSON', {}, -32700);
    }
  }

  private checkHostAndOrigin(req: IncomingMessage): void {
    const host = req.headers.host;
    if (this.config.GATEWAY_ALLOWED_HOSTS.length && (!host || !this.config.GATEWAY_ALLOWED_HOSTS.includes(host)))
      throw new HttpRefusal(403, 'Forbidden: Host not allowed');
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const allowed = new Set(this.config.GATEWAY_ALLOWED_ORIGINS);
    if (this.config.GATEWAY_PUBLIC_URL) allowed.add(new URL(this.config.GATEWAY_PUBLIC_URL).origin);
    if (
      !allowed.has(origin) &&
      !(/^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i.test(host ?? '') && origin === `http://${host}`)
    )
      throw new HttpRefusal(403, 'Forbidden: Origin not allowed'); // a loopback Host's own origin: no rebinding there
  }

  private baseUrl(req: IncomingMessage): string {
    if (this.config.GATEWAY_PUBLIC_URL) return this.config.GATEWAY_PUBLIC_URL.replace(/\/+$/, '');
    return `http://${req.headers.host ?? `127.0.0.1:${this.config.GATEWAY_PORT}`}`;
  }

  private refuse(res: ServerResponse, e: unknown, endpoint: Endpoint, req: IncomingMessage): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (e instanceof AuthRefused) {
      const metadata = `${this.baseUrl(req)}${PRM_PREFIX}${endpointPath(endpoint)}`;
      const parts = [
        `error="${e.error}"`,
        `error_description="${e.message.replace(/["\\]/g, "'")}"`,
        `resource_metadata="${metadata}"`,
        ...(e.scope ? [`scope="${e.scope}"`] : []),
      ];
      return json(
        res,
        e.status,
        { jsonrpc: '2.0', error: { code: -32001, message: e.message }, id: null },
        { 'www-authenticate': `Bearer ${parts.join(', ')}` },
      );
    }
    if (e instanceof HttpRefusal)
      return json(
        res,
        e.status,
        { jsonrpc: '2.0', error: { code: e.rpcCode, message: e.message }, id: null },
        e.headers,
      );
    if (e instanceof ToolplaneError) {
      const status = e.code === ErrorCode.SERVICE_UNAVAILABLE || e.retryable ? 503 : 500;
      return json(
        res,
        status,
        {
          jsonrpc: '2.0',
          error: { code: -32603, message: e.message, data: { code: e.code, retryable: e.retryable } },
          id: null,
        },
        e.retryable ? { 'retry-after': '1' } : {},
      );
    }
    this.log.error(`request failed: ${(e as Error)?.message ?? String(e)}`);
    json(res, 500, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
  }
}

/** Settles once the transport has sent (or failed to send: the connection is gone) a response to each of `ids`. */
function answeredBy(transport: StreamableHTTPServerTransport, ids: RequestId[]): Promise<void> {
  const unanswered = new Set(ids);
  return new Promise<void>((resolve) => {
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
      try {
        return await send(message, options);
      } finally {
        if (
          (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) &&
          message.id !== undefined &&
          unanswered.delete(message.id) &&
          !unanswered.size
        )
          resolve();
      }
    };
  });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
