import { Inject, Injectable } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode as McpErrorCode, ListToolsRequestSchema, McpError, type ClientCapabilities, type Implementation } from '@modelcontextprotocol/sdk/types.js';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { Caller } from '../auth/caller';
import { CallToolService, protocolError } from '../calls/call-tool.service';
import { ExecutionTaskStore } from '../calls/execution-tasks';
import type { GatewayConfig } from '../mcp-gateway.config';
import type { Endpoint, SessionRecord } from '../sessions/session';
import { EndpointToolsService } from '../tools/endpoint-tools.service';

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
  constructor(
    private readonly endpointTools: EndpointToolsService,
    private readonly calls: CallToolService,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  create(caller: Caller, endpoint: Endpoint, session?: SessionRecord, instructions?: string): Server {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      // MCP tasks are Toolplane executions: tasks/get, tasks/result, tasks/cancel and tasks/list read the records.
      taskStore: new ExecutionTaskStore(this.messaging, caller, endpoint),
      ...(instructions ? { instructions } : {}),
    });
    if (session) restoreClient(server, session.capabilities, session.client_info);
    const capabilities = () => server.getClientCapabilities();
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      try {
        const { tools } = await this.endpointTools.of(caller.org, endpoint);
        const offset = decodeCursor(request.params?.cursor);
        const page = tools.slice(offset, offset + this.config.GATEWAY_PAGE_SIZE).map((t) => t.definition);
        const next = offset + page.length;
        return { tools: page, ...(next < tools.length ? { nextCursor: encodeCursor(next) } : {}) };
      } catch (e) {
        throw protocolError(e);
      }
    });
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const ctx = { caller, endpoint, capabilities: capabilities() };
      const args = request.params.arguments ?? {};
      return request.params.task ? this.calls.callAsTask(ctx, request.params.name, args, request.params.task.ttl ?? null) : this.calls.call(ctx, request.params.name, args, extra);
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
  Object.assign(server as unknown as Record<string, unknown>, { _clientCapabilities: capabilities, _clientVersion: clientInfo });
}
