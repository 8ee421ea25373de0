import { Inject, Injectable } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type ClientCapabilities,
  type CreateTaskResult,
  type Implementation,
} from '@modelcontextprotocol/sdk/types.js';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Caller } from '../auth/caller';
import { CallToolService, protocolError } from '../calls/call-tool.service';
import { ExecutionTaskStore } from '../calls/execution-tasks';
import type { GatewayConfig } from '../mcp-gateway.config';
import type { SessionRecord } from '../sessions/session';
import type { Endpoint } from '../tools/endpoint';
import { EndpointToolsService } from '../tools/endpoint-tools.service';

const tracer = trace.getTracer('mcp-gateway');

/**
 * One span per MCP request, as OpenTelemetry's MCP semantic conventions name it
 * (`{mcp.method.name} {target}`, SERVER): its method, JSON-RPC id, protocol version, and for
 * tools/call the tool (`gen_ai.tool.name`, `gen_ai.operation.name` execute_tool). Everything the
 * call does (the NATS requests to the services) is its child. A JSON-RPC error sets error.type and
 * rpc.response.status_code; a tool error (isError) is not a span error.
 */
function mcpSpan<T>(
  method: string,
  target: string | undefined,
  attributes: Record<string, string | number>,
  fn: () => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(
    target ? `${method} ${target}` : method,
    { kind: SpanKind.SERVER, attributes: { 'mcp.method.name': method, ...attributes } },
    async (span) => {
      try {
        const result = await fn();
        if ((result as { isError?: unknown } | undefined)?.isError === true)
          span.setAttribute('error.type', 'tool_error');
        return result;
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        span.setAttributes({
          'error.type': typeof code === 'number' ? String(code) : '_OTHER',
          ...(typeof code === 'number' ? { 'rpc.response.status_code': String(code) } : {}),
        });
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw e;
      } finally {
        span.end();
      }
    },
  );
}

export const SERVER_INFO: Implementation = { name: 'toolplane', title: 'Toolplane', version: '0.1.0' };

/** tools/list cursors: the offset into the endpoint's list, opaque to the client. */
const encodeCursor = (offset: number) => Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  try {
    const o = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown }).o;
    if (typeof o === 'number' && Number.isInteger(o) && o >= 0) return o;
  } catch {
    // below
  }
  throw new McpError(McpErrorCode.InvalidParams, 'Invalid cursor');
}

/**
 * One MCP `Server` (the SDK's) per HTTP request of a session: the SDK's request handling,
 * validation and JSON-RPC framing, over what the session record says of the client. Nothing of a
 * session lives in it past its request, so any replica can build it again.
 */
@Injectable()
export class McpServerFactory {
  /**
   * One JSON Schema validator for every Server this replica builds: without it each Server makes
   * its own Ajv instance with its formats, ~0.26 ms and ~17 KiB per HTTP request (bench:gateway's
   * CPU profile). The SDK's Server uses it only in elicitInput (schemas compiled per call), which
   * the gateway never calls, so nothing accumulates in it.
   */
  private readonly validator = new AjvJsonSchemaValidator();

  constructor(
    private readonly endpointTools: EndpointToolsService,
    private readonly calls: CallToolService,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /**
   * `answersAsJson`: the request is answered as plain JSON (nothing can reach the client before the
   * answer), so no approval is asked by elicitation on it: a held call answers its tool error.
   */
  create(
    caller: Caller,
    endpoint: Endpoint,
    session?: SessionRecord,
    instructions?: string,
    answersAsJson = false,
  ): Server {
    const server = new Server(SERVER_INFO, {
      capabilities: {
        tools: { listChanged: true },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      // MCP tasks are Toolplane executions: tasks/get, tasks/result, tasks/cancel and tasks/list read the records.
      taskStore: new ExecutionTaskStore(this.messaging, caller, endpoint),
      jsonSchemaValidator: this.validator,
      ...(instructions ? { instructions } : {}),
    });
    if (session) restoreClient(server, session.capabilities, session.client_info);
    const capabilities = () => server.getClientCapabilities();
    const common = (requestId: string | number) => ({
      'jsonrpc.request.id': String(requestId),
      ...(session ? { 'mcp.protocol.version': session.protocol_version } : {}),
    });
    server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
      mcpSpan('tools/list', undefined, common(extra.requestId), async () => {
        try {
          const { tools } = await this.endpointTools.of(caller.org, endpoint);
          const offset = decodeCursor(request.params?.cursor);
          const page = tools.slice(offset, offset + this.config.GATEWAY_PAGE_SIZE).map((t) => t.definition);
          const next = offset + page.length;
          return { tools: page, ...(next < tools.length ? { nextCursor: encodeCursor(next) } : {}) };
        } catch (e) {
          throw protocolError(e);
        }
      }),
    );
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const caps = capabilities();
      const ctx = {
        caller,
        endpoint,
        capabilities: answersAsJson && caps ? { ...caps, elicitation: undefined } : caps,
      };
      const { name, arguments: args = {}, task } = request.params;
      return mcpSpan<CallToolResult | CreateTaskResult>(
        'tools/call',
        name,
        { ...common(extra.requestId), 'gen_ai.tool.name': name, 'gen_ai.operation.name': 'execute_tool' },
        () =>
          task ? this.calls.callAsTask(ctx, name, args, task.ttl ?? null) : this.calls.call(ctx, name, args, extra),
      );
    });
    return server;
  }
}

/**
 * What the client said in `initialize`, given back to a Server built for a later request of its
 * session (on any replica). The SDK keeps it in private fields that only its initialize handler
 * sets; mcp-server.factory.spec.ts fails if a new SDK version moves them.
 */
export function restoreClient(server: Server, capabilities: ClientCapabilities, clientInfo: Implementation): void {
  Object.assign(server as unknown as Record<string, unknown>, {
    _clientCapabilities: capabilities,
    _clientVersion: clientInfo,
  });
}
