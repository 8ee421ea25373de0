import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import {
  ErrorCode as McpErrorCode,
  McpError,
  type CallToolResult,
  type Result,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import {
  ErrorCode,
  ExecutionsDeny,
  ExecutionsGet,
  ExecutionsList,
  ToolplaneError,
  type ExecutionRecord,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import type { MessagingClient } from '@toolplane/messaging';
import type { Caller } from '../auth/caller';
import type { Endpoint } from '../tools/endpoint';
import { toCallToolResult } from '../tools/mcp-tool.mapper';

/** How often a client should ask again (and how often tasks/result looks) while a task runs. */
export const TASK_POLL_MS = 1000;
const REQUEST_TIMEOUT_MS = 10_000;
/** What the deny of a task cancelled by its client says. */
export const CANCELLED_REASON = 'cancelled by the MCP client (tasks/cancel)';

/** An execution's state → the task status MCP 2025-11-25 defines. */
export function taskStatusOf(e: ExecutionRecord): Task['status'] {
  switch (e.status) {
    case 'pending_approval':
    case 'awaiting_client':
      return 'input_required';
    case 'queued':
    case 'running':
      return 'working';
    case 'succeeded':
      return 'completed';
    case 'denied':
      return 'cancelled';
    default:
      return 'failed';
  }
}

export function taskOf(e: ExecutionRecord, ttl: number | null = null): Task {
  const status = taskStatusOf(e);
  const message =
    e.status === 'pending_approval'
      ? `Waiting for an approver (toolplane.v1.executions.approve or deny) until ${e.expires_at}`
      : e.status === 'denied'
        ? 'Denied: nothing ran'
        : e.status === 'expired'
          ? 'Nobody approved it in time: nothing ran'
          : e.error_code
            ? `Failed: ${e.error_code}`
            : undefined;
  return {
    taskId: e.execution_id,
    status,
    ttl,
    createdAt: e.created_at,
    lastUpdatedAt: e.finished_at ?? e.started_at ?? e.created_at,
    ...(status === 'completed' || status === 'failed' || status === 'cancelled' ? {} : { pollInterval: TASK_POLL_MS }),
    ...(message ? { statusMessage: message } : {}),
  };
}

/**
 * MCP tasks over Toolplane's execution records: a task is an execution (taskId = execution_id),
 * so any replica answers tasks/get, tasks/result and tasks/cancel of any session, and a task
 * outlives the gateway. A task-augmented tools/call runs as an async execution (CallToolService);
 * one that needs approval is `input_required` until an approver acts. Cancelling a task that
 * waits for approval denies it; a task already running cannot be cancelled (no execution can be
 * stopped once queued). Tasks are those of the caller's org (and of the agent, on an agent's
 * endpoint); a task id of another org is not found.
 */
export class ExecutionTaskStore implements TaskStore {
  constructor(
    private readonly messaging: MessagingClient,
    private readonly caller: Caller,
    private readonly endpoint: Endpoint,
  ) {}

  createTask(_options: CreateTaskOptions): Promise<Task> {
    // Tasks are made by CallToolService from the execution it starts, never through the SDK's store.
    throw new McpError(McpErrorCode.InternalError, 'Tasks are created by tools/call only');
  }

  async getTask(taskId: string): Promise<Task | null> {
    const found = await this.get(taskId);
    return found ? taskOf(found.execution) : null;
  }

  async storeTaskResult(): Promise<void> {
    // The execution record holds the result.
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const found = await this.get(taskId);
    if (!found) throw new McpError(McpErrorCode.InvalidParams, `Task not found: ${taskId}`);
    if (found.result) return toCallToolResult(found.result as ToolExecutionResult) as CallToolResult;
    const e = found.execution;
    const text =
      e.status === 'expired'
        ? 'Nobody approved the call in time: nothing ran'
        : `The call ended ${e.status}${e.error_code ? ` (${e.error_code})` : ''}; its result is no longer kept`;
    return {
      content: [{ type: 'text', text }],
      isError: true,
      _meta: { 'toolplane/execution_id': e.execution_id },
    } satisfies CallToolResult;
  }

  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled') throw new McpError(McpErrorCode.InvalidParams, `A client cannot set a task ${status}`);
    const found = await this.get(taskId);
    if (!found) throw new McpError(McpErrorCode.InvalidParams, `Task not found: ${taskId}`);
    if (found.execution.status !== 'pending_approval')
      throw new McpError(
        McpErrorCode.InvalidParams,
        `Task ${taskId} is ${taskStatusOf(found.execution)}: only a task waiting for approval can be cancelled`,
      );
    try {
      await this.messaging.request(
        ExecutionsDeny,
        { org_id: this.caller.org, execution_id: taskId, reason: CANCELLED_REASON },
        { timeoutMs: REQUEST_TIMEOUT_MS },
      );
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.EXECUTION_NOT_PENDING)
        throw new McpError(McpErrorCode.InvalidParams, `Task ${taskId} is no longer waiting for approval`);
      throw e;
    }
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const page = await this.messaging.request(
      ExecutionsList,
      {
        org_id: this.caller.org,
        limit: 50,
        ...(cursor ? { cursor } : {}),
        ...(this.endpoint.kind === 'agent' ? { agent_id: this.endpoint.id } : {}),
        ...(this.caller.userId ? { user_id: this.caller.userId } : {}),
      },
      { timeoutMs: REQUEST_TIMEOUT_MS },
    );
    return {
      tasks: page.executions.filter((e) => e.mode === 'async').map((e) => taskOf(e)),
      ...(page.next_cursor ? { nextCursor: page.next_cursor } : {}),
    };
  }

  /** The execution of a task id, if it is the caller's: another org's id, a malformed one or an unknown one is not found. */
  private async get(
    taskId: string,
  ): Promise<{ execution: ExecutionRecord; result: ToolExecutionResult | null } | undefined> {
    if (!/^exec-[0-9a-f-]{36}$/.test(taskId)) return undefined;
    try {
      const r = await this.messaging.request(
        ExecutionsGet,
        { org_id: this.caller.org, execution_id: taskId },
        { timeoutMs: REQUEST_TIMEOUT_MS },
      );
      if (this.endpoint.kind === 'agent' && r.execution.agent_id !== this.endpoint.id) return undefined;
      if (this.caller.userId && r.execution.user_id !== this.caller.userId) return undefined;
      return { execution: r.execution, result: r.result };
    } catch (e) {
      if (e instanceof ToolplaneError && e.code === ErrorCode.EXECUTION_NOT_FOUND) return undefined;
      throw e;
    }
  }
}
