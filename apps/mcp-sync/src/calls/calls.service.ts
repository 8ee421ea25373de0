import { Injectable, Logger } from '@nestjs/common';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { trace } from '@opentelemetry/api';
import { ErrorCode, ToolplaneError, type McpToolsCall, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { currentRequestSignal, reportProgress } from '@toolplane/messaging';
import { z } from 'zod';
import { ConnectionPool } from '../connections/connection-pool';
import { ServerCache } from '../connections/server-cache';
import { errorText, toFuncReturn } from './content-mapper';

type Reply = ReplyOf<typeof McpToolsCall>;

/** Loose on purpose: content parts of types this SDK does not know still come through. */
const LooseCallResult = z.looseObject({
  content: z.array(z.unknown()).default([]),
  structuredContent: z.unknown().optional(),
  isError: z.boolean().optional(),
});

/**
 * One tools/call on a pooled session: bounded by the agent's timeout (connecting included), each
 * progress notification restarting it up to max_timeout_ms (and forwarded to the caller that asked
 * for progress); when it expires, or the request is cancelled, the SDK sends notifications/cancelled
 * to the server. isError → status error with the server's text.
 */
@Injectable()
export class CallsService {
  private readonly log = new Logger(CallsService.name);

  constructor(
    private readonly servers: ServerCache,
    private readonly pool: ConnectionPool,
  ) {}

  async call(req: RequestOf<typeof McpToolsCall>): Promise<Reply> {
    const started = performance.now();
    const mcp = req.mcp;
    const found = await this.servers.get(req.org_id, mcp.server_id);
    if (!found)
      throw new ToolplaneError(
        ErrorCode.MCP_SERVER_NOT_FOUND,
        `The MCP server of this tool (${mcp.server_name}) was removed`,
        { server_id: mcp.server_id },
      );
    if (mcp.health === 'INVALID') {
      throw new ToolplaneError(
        ErrorCode.SCHEMA_INVALID,
        `MCP tool ${mcp.tool_name} of ${mcp.server_name} has an INVALID schema and is not executable until the server fixes it: ${mcp.reasons.slice(0, 3).join('; ')}`,
        { reasons: mcp.reasons },
      );
    }
    const { server } = found;
    // An `account: "user"` server is called on the user's own connection; a templated one on the (user, agent)'s own.
    const target = this.pool.forCaller(found.target, req.user_id, req.agent_id);
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'toolplane.mcp.server': server.name, 'toolplane.mcp.tool': mcp.tool_name });
    const deadline = Date.now() + req.timeout_ms;
    let progressEvents = 0;
    const fail = (code: string, message: string): Reply =>
      this.reply(started, 'error', `Error executing function ${mcp.tool_name}: ${message}`, { code, message });
    try {
      const result = await this.pool.withConnection(target, deadline, (c) =>
        c.client.request(
          { method: 'tools/call', params: { name: mcp.tool_name, arguments: req.args } },
          LooseCallResult,
          {
            timeout: Math.max(1, deadline - Date.now()),
            resetTimeoutOnProgress: true,
            maxTotalTimeout: Math.max(req.timeout_ms, req.max_timeout_ms),
            // This call's cancel (its caller's, a deadline, a shutdown) sends notifications/cancelled to the server.
            signal: currentRequestSignal(),
            onprogress: ({ progress, total, message }) => {
              progressEvents += 1;
              // On to the caller, when it asked for progress (coalesced and capped by messaging).
              reportProgress({
                progress,
                ...(total !== undefined ? { total } : {}),
                ...(message !== undefined ? { message } : {}),
              });
            },
          },
        ),
      );
      span?.setAttribute('toolplane.mcp.progress_events', progressEvents);
      if (result.isError) {
        const text = errorText(result);
        return this.reply(started, 'error', text, { code: ErrorCode.TOOL_EXCEPTION, message: text.slice(0, 4000) });
      }
      return this.reply(started, 'success', toFuncReturn(result));
    } catch (e) {
      if (e instanceof McpError && e.code === McpErrorCode.RequestTimeout) {
        this.log.log(
          `call of ${mcp.tool_name} on ${server.name} timed out after ${Math.round(performance.now() - started)} ms (${progressEvents} progress event(s)); cancellation sent`,
        );
        return fail(
          ErrorCode.EXECUTION_TIMEOUT,
          `TimeoutError: no result within ${req.timeout_ms} ms${progressEvents ? ` of the last progress notification` : ''}`,
        );
      }
      if (e instanceof McpError) return fail(ErrorCode.TOOL_EXCEPTION, `McpError ${e.code}: ${e.message}`);
      if (e instanceof ToolplaneError && e.code === ErrorCode.MCP_CONNECTION_FAILED && Date.now() >= deadline) {
        return fail(
          ErrorCode.EXECUTION_TIMEOUT,
          `TimeoutError: could not reach ${server.name} within ${req.timeout_ms} ms (${e.message})`,
        );
      }
      throw e;
    }
  }

  private reply(
    started: number,
    status: 'success' | 'error',
    funcReturn: unknown,
    error?: { code: string; message: string },
  ): Reply {
    return {
      status,
      func_return: funcReturn,
      stdout: [],
      stderr: [],
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      provider: 'mcp',
      sandbox_config_fingerprint: null,
      ...(error ? { error } : {}),
    };
  }
}
