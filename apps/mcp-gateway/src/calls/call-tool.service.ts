import { Inject, Injectable } from '@nestjs/common';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  ElicitResultSchema,
  ErrorCode as McpErrorCode,
  McpError,
  type CallToolResult,
  type ClientCapabilities,
  type CreateTaskResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import {
  ErrorCode,
  ExecutionsApprove,
  ExecutionsDeny,
  ToolplaneError,
  TOOL_LEVEL_CODES,
  ToolsExecute,
  type ExecuteReply,
  type RequestProgress,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { currentTraceId, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { Caller } from '../auth/caller';
import type { GatewayConfig } from '../mcp-gateway.config';
import type { Endpoint } from '../tools/endpoint';
import { EndpointToolsService } from '../tools/endpoint-tools.service';
import { toCallToolResult } from '../tools/mcp-tool.mapper';
import { ConnectionWaits } from './connection-waits';
import { TASK_POLL_MS } from './execution-tasks';

const REQUEST_TIMEOUT_MS = 10_000;

export type CallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What a call knows of its session. */
export interface CallContext {
  caller: Caller;
  endpoint: Endpoint;
  capabilities: ClientCapabilities | undefined;
}

/**
 * tools/call → toolplane.v1.tools.execute, with everything that path does (validation, provider
 * choice, env and secrets, masking, truncation, records, idempotency). The client's cancellation
 * aborts the request (extra.signal). A call that needs approval asks the person at the client
 * through elicitation when the client can, else answers a tool error naming the execution and how
 * to approve it. Toolplane's own failures become a JSON-RPC error with the Toolplane code in data.
 */
@Injectable()
export class CallToolService {
  constructor(
    private readonly messaging: MessagingClient,
    private readonly endpointTools: EndpointToolsService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    private readonly connections: ConnectionWaits,
  ) {}

  async call(ctx: CallContext, name: string, args: Record<string, unknown>, extra: CallExtra): Promise<CallToolResult> {
    const found = await this.find(ctx, name);
    // The client's notifications/cancelled aborts extra.signal: the cancel follows the call to the runner.
    const run = async () =>
      this.answer(
        ctx,
        await this.messaging.request(ToolsExecute, this.request(ctx, found.tool.id, args), {
          timeoutMs: this.config.GATEWAY_CALL_TIMEOUT_MS,
          signal: extra.signal,
          ...progressOf(extra),
        }),
        extra,
      );
    try {
      return await run();
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.MCP_AUTHORIZATION_REQUIRED)
        return this.authorization(ctx, e, extra, run);
      return toolLevel(e) ?? Promise.reject(protocolError(e));
    }
  }

  /**
   * The MCP server behind the tool needs an authorization (the caller's own account, or the org's):
   * a client that takes URL-mode elicitation is asked to open the authorization URL, and once the
   * account is connected the call runs again; any other client gets a tool error with the URL in
   * its text (and in _meta), so the person at the client can open it.
   */
  private async authorization(
    ctx: CallContext,
    e: ToolplaneError,
    extra: CallExtra,
    retry: () => Promise<CallToolResult>,
  ): Promise<CallToolResult> {
    const d = (e.details ?? {}) as {
      authorization_url?: string;
      state?: string;
      expires_at?: string;
      server_id?: string;
      server_name?: string;
    };
    const url = d.authorization_url;
    if (url && d.state && d.server_id && ctx.capabilities?.elicitation?.url) {
      const connected = this.connections.next(ctx.caller.org, ctx.caller.userId, d.server_id);
      try {
        const answer = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: {
              mode: 'url',
              elicitationId: d.state,
              url,
              message: `Connect your account of ${d.server_name ?? 'the MCP server'} to run this tool`,
            },
          },
          ElicitResultSchema,
          { timeout: this.config.GATEWAY_ELICITATION_TIMEOUT_MS },
        );
        if (
          answer.action === 'accept' &&
          (await connected.wait(this.config.GATEWAY_ELICITATION_TIMEOUT_MS, extra.signal))
        ) {
          await extra
            .sendNotification({ method: 'notifications/elicitation/complete', params: { elicitationId: d.state } })
            .catch(() => undefined);
          return await retry();
        }
      } finally {
        connected.cancel();
      }
    }
    const text = `${e.message}${url ? `: ${url}` : ''}${d.expires_at ? ` (before ${d.expires_at})` : ''}`;
    return {
      content: [{ type: 'text', text }],
      isError: true,
      _meta: {
        'toolplane/error_code': e.code,
        'toolplane/trace_id': e.trace_id ?? currentTraceId(),
        ...(url
          ? {
              'toolplane/authorization_url': url,
              'toolplane/state': d.state ?? null,
              'toolplane/expires_at': d.expires_at ?? null,
            }
          : {}),
      },
    };
  }

  /**
   * A task-augmented tools/call (MCP 2025-11-25 tasks): the call runs as an async execution and the
   * client gets its task at once — `working` while queued or running, `input_required` while it
   * waits for an approver. tasks/get, tasks/result and tasks/cancel read the execution record.
   */
  async callAsTask(
    ctx: CallContext,
    name: string,
    args: Record<string, unknown>,
    ttl: number | null,
  ): Promise<CreateTaskResult> {
    const found = await this.find(ctx, name);
    try {
      const reply = await this.messaging.request(
        ToolsExecute,
        { ...this.request(ctx, found.tool.id, args), mode: 'async' },
        { timeoutMs: REQUEST_TIMEOUT_MS },
      );
      const now = new Date().toISOString();
      const waiting = reply.status === 'pending_approval' || reply.status === 'awaiting_client';
      const status = waiting
        ? 'input_required'
        : reply.status === 'queued' || reply.status === 'running'
          ? 'working'
          : reply.status === 'succeeded'
            ? 'completed'
            : 'failed';
      const terminal = status === 'completed' || status === 'failed';
      return {
        task: {
          taskId: reply.execution_id,
          status,
          ttl,
          createdAt: now,
          lastUpdatedAt: now,
          ...(terminal ? {} : { pollInterval: TASK_POLL_MS }),
          ...(reply.status === 'pending_approval'
            ? {
                statusMessage: `Waiting for an approver (toolplane.v1.executions.approve or deny) until ${reply.expires_at}`,
              }
            : {}),
        },
      };
    } catch (e) {
      throw protocolError(e);
    }
  }

  private async find(ctx: CallContext, name: string) {
    const { tools, byName } = await this.endpointTools.of(ctx.caller.org, ctx.endpoint);
    const found = byName.get(name);
    if (!found)
      throw new McpError(
        McpErrorCode.InvalidParams,
        `Unknown tool: ${name} (this endpoint serves ${tools.length} tool(s))`,
      );
    return found;
  }

  private request(ctx: CallContext, toolId: string, args: Record<string, unknown>) {
    return {
      org_id: ctx.caller.org,
      tool_id: toolId,
      args,
      ...(ctx.endpoint.kind === 'agent' ? { agent_id: ctx.endpoint.id } : {}),
      ...(ctx.endpoint.kind === 'toolset' ? { toolset: ctx.endpoint.id } : {}),
      ...(ctx.caller.userId ? { user_id: ctx.caller.userId } : {}),
    };
  }

  private async answer(ctx: CallContext, reply: ExecuteReply, extra: CallExtra): Promise<CallToolResult> {
    if ('trace_id' in reply) return toCallToolResult(reply as ToolExecutionResult);
    if (reply.status === 'pending_approval') return this.approval(ctx, reply, extra);
    if (reply.status === 'awaiting_client') {
      return errorResult(
        `${reply.tool_name} is a client-side tool: the agent runtime runs it, not this server (execution ${reply.execution_id})`,
        reply.execution_id,
        reply.status,
      );
    }
    return errorResult(
      `The call was taken for later (execution ${reply.execution_id}, ${reply.status}): read its outcome with toolplane.v1.executions.get`,
      reply.execution_id,
      reply.status,
    );
  }

  private async approval(
    ctx: CallContext,
    held: Extract<ExecuteReply, { status: 'pending_approval' }>,
    extra: CallExtra,
  ): Promise<CallToolResult> {
    const how = `An approver runs it with toolplane.v1.executions.approve {"execution_id": "${held.execution_id}"} (CLI: toolplane executions approve ${held.execution_id}) or refuses it with executions.deny, before ${held.expires_at}.`;
    if (!ctx.capabilities?.elicitation) {
      return errorResult(
        `This call of ${held.tool_name} needs approval: execution ${held.execution_id} waits for it. ${how}`,
        held.execution_id,
        held.status,
      );
    }
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: `Allow ${held.tool_name} to run with these arguments?\n${JSON.stringify(held.args, null, 2).slice(0, 4000)}`,
          requestedSchema: {
            type: 'object',
            properties: {
              reason: {
                type: 'string',
                title: 'Reason',
                description: 'Why you decline (shown to the agent)',
                maxLength: 4096,
              },
            },
          },
        },
      },
      ElicitResultSchema,
      { timeout: this.config.GATEWAY_ELICITATION_TIMEOUT_MS },
    );
    const ref = { org_id: ctx.caller.org, execution_id: held.execution_id };
    const opts = { timeoutMs: this.config.GATEWAY_CALL_TIMEOUT_MS, signal: extra.signal };
    if (answer.action === 'accept')
      return this.answer(ctx, await this.messaging.request(ExecutionsApprove, ref, opts), extra);
    if (answer.action === 'decline') {
      const reason =
        typeof answer.content?.reason === 'string' && answer.content.reason
          ? answer.content.reason
          : 'declined at the MCP client';
      const denied = await this.messaging.request(ExecutionsDeny, { ...ref, reason }, opts);
      return toCallToolResult(denied.result);
    }
    return errorResult(
      `The approval of ${held.tool_name} was dismissed: execution ${held.execution_id} still waits. ${how}`,
      held.execution_id,
      held.status,
    );
  }
}

/** The tool's progress (an MCP upstream's, through executor and mcp-sync) as notifications/progress, when the client gave a progressToken. */
function progressOf(extra: CallExtra): { onProgress?: (p: RequestProgress) => void } {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return {};
  return {
    onProgress: (p) =>
      void extra
        .sendNotification({
          method: 'notifications/progress',
          params: {
            progressToken,
            progress: p.progress,
            ...(p.total !== undefined ? { total: p.total } : {}),
            ...(p.message !== undefined ? { message: p.message } : {}),
          },
        })
        .catch(() => undefined),
  };
}

/** A call that did not run here (held, client-side, taken for later): a tool error naming its execution and the state it is in. */
function errorResult(text: string, executionId: string, status: string): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    isError: true,
    _meta: {
      'toolplane/execution_id': executionId,
      'toolplane/execution_status': status,
      'toolplane/trace_id': currentTraceId(),
    },
  };
}

function toolLevel(e: unknown): CallToolResult | undefined {
  if (!(e instanceof ToolplaneError) || !TOOL_LEVEL_CODES.has(e.code)) return undefined;
  return {
    content: [{ type: 'text', text: e.message }],
    isError: true,
    _meta: { 'toolplane/error_code': e.code, 'toolplane/trace_id': e.trace_id ?? currentTraceId() },
  };
}

/** A Toolplane failure as a JSON-RPC error: its code, retry flag and trace id in `data`; never a stack or an internal address. */
export function protocolError(e: unknown): McpError {
  if (e instanceof McpError) return e;
  if (e instanceof ToolplaneError) {
    const code =
      e.code === ErrorCode.TOOL_NOT_FOUND || e.code === ErrorCode.TOOLSET_NOT_FOUND
        ? McpErrorCode.InvalidParams
        : McpErrorCode.InternalError;
    return new McpError(code, e.message, {
      code: e.code,
      retryable: e.retryable,
      trace_id: e.trace_id ?? currentTraceId(),
    });
  }
  return new McpError(McpErrorCode.InternalError, 'Internal error', {
    code: ErrorCode.INTERNAL,
    retryable: false,
    trace_id: currentTraceId(),
  });
}
