import { z } from 'zod';
import { JsonObject, OrgId } from './common';
import { defineEvent, defineRequest, defineWorkQueue } from './descriptor';
import { EndUserId, ExecuteReply, ExecutionId, ExecutionStatus, ToolExecutionResult } from './execute.contract';
import { ToolId } from './tool';
import { ToolsetName } from './toolsets.contract';

/**
 * Execution records: every call of tools.execute / execute-batch has one, owned by the executor —
 * an id, a state and exactly one outcome. Arguments and results are kept only sealed (credentials'
 * key ring) and only for their retention; the records themselves carry no argument or result.
 */

/**
 * pending_approval → queued | running → succeeded | failed; pending_approval → denied | expired;
 * awaiting_client → succeeded | failed (the client's report). queued: async, waiting on the work
 * queue; running: claimed by one executor.
 */
export const ExecutionState = z.enum([
  'pending_approval',
  'queued',
  'running',
  'succeeded',
  'failed',
  'denied',
  'expired',
  'awaiting_client',
]);
export type ExecutionState = z.infer<typeof ExecutionState>;
/** States an execution never leaves. */
export const FINAL_EXECUTION_STATES: ReadonlySet<ExecutionState> = new Set([
  'succeeded',
  'failed',
  'denied',
  'expired',
]);

export const ExecutionRecord = z.object({
  execution_id: ExecutionId,
  org_id: OrgId,
  agent_id: z.string().nullable(),
  /** The end user the call was made for (the request's user_id); null when it named none (absent from older executors: read as null). */
  user_id: z.string().nullable().default(null),
  /** The tool set the call was made through (the request's toolset); null when none (absent from older executors: read as null). */
  toolset: z.string().nullable().default(null),
  /** null only for a batch call whose tool was not found. */
  tool_id: ToolId.nullable(),
  tool_name: z.string().nullable(),
  /** The provider that ran it (local, e2b, mcp, client); null while nothing ran. */
  provider: z.string().nullable(),
  status: ExecutionState,
  mode: z.enum(['sync', 'async']),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  duration_ms: z.number().nullable(),
  /** The outcome's error code (the tool's own, TOOL_EXCEPTION, EXECUTOR_LOST, EXECUTION_DENIED…); null on success. */
  error_code: z.string().nullable(),
  trace_id: z.string(),
  idempotency_key: z.string().nullable(),
  /** The execute-batch request it came in (with its call_id), if any. */
  batch_id: z.string().nullable(),
  call_id: z.string().nullable(),
  /** pending_approval: when it expires unless approved or denied. */
  expires_at: z.string().nullable(),
});
export type ExecutionRecord = z.infer<typeof ExecutionRecord>;

/**
 * One execution of the org. With `user_id` (an end user's request; a token bound to an end user
 * always sends its own): only that user's execution — another user's, or one with no user, is
 * EXECUTION_NOT_FOUND.
 */
const ExecutionRef = { org_id: OrgId, execution_id: ExecutionId, user_id: EndUserId.optional() };

export const ExecutionsGet = defineRequest({
  subject: 'toolplane.v1.executions.get',
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:read',
  summary:
    'One execution of the org: its record; its args while it waits (pending_approval, queued, awaiting_client); its result while kept (EXECUTION_RESULT_RETENTION_MS, default 24 h), else null. Read your writes: an id handed out is answered with its record from any replica, even the record of a sync call without an idempotency key, written just after it answered (EXECUTION_WRITE_BEHIND_MS): the get waits for it (at most EXECUTION_READ_WAIT_MS after the id was handed out). EXECUTION_NOT_FOUND: no such execution in this org (or for this end user).',
  request: z.strictObject(ExecutionRef),
  reply: z.object({ execution: ExecutionRecord, args: JsonObject.nullable(), result: ToolExecutionResult.nullable() }),
});

/**
 * Read your writes across executor replicas: an executions.get that finds no record yet for an id
 * just handed out asks every replica for it; the one holding it in its write-behind queue writes it
 * now instead of at its window's end. Sealed: only executors open it.
 */
export const ExecutionRecordWanted = defineEvent({
  subject: 'toolplane.internal.v1.events.execution-record.wanted',
  publishedBy: ['executor'],
  summary:
    'An executions.get found no record yet for an execution id just handed out: the executor replica holding it in its write-behind queue writes it now.',
  payload: z.object({ org_id: OrgId, execution_id: ExecutionId }),
  sealed: { from: ['executor'], to: 'executor' },
});

export const ExecutionsList = defineRequest({
  subject: 'toolplane.v1.executions.list',
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:read',
  summary:
    "The org's executions, newest first, filtered by agent, end user, tool set, tool and state, a page at a time (records only: no args, no results). Stale by up to EXECUTION_WRITE_BEHIND_MS (default 200 ms) plus one write: a sync call without an idempotency key is listed once its record, written behind its answer, is in; every durable call (idempotency key, async, approval, client-side) is listed before it answers.",
  request: z.strictObject({
    org_id: OrgId,
    agent_id: z.string().min(1).max(128).optional(),
    /** Only the executions made for this end user (the user_id of their request). */
    user_id: EndUserId.optional(),
    /** Only the executions of calls made through this tool set (the toolset of their request). */
    toolset: ToolsetName.optional(),
    tool_id: ToolId.optional(),
    status: ExecutionState.optional(),
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  reply: z.object({ executions: z.array(ExecutionRecord), next_cursor: z.string().nullable() }),
});

export const ExecutionsApprove = defineRequest({
  subject: 'toolplane.v1.executions.approve',
  opaque: ['args'],
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:execute',
  summary:
    'Approve an execution waiting for approval and run it: the answer is its result (sync), `{status: "queued"}` (async) or `awaiting_client` (a client-side tool). `args` replaces the call\'s arguments (validated again: INVALID_ARGUMENTS leaves it pending). Anything not pending_approval is EXECUTION_NOT_PENDING.',
  request: z.strictObject({ ...ExecutionRef, args: JsonObject.optional() }),
  reply: ExecuteReply,
});

export const ExecutionsDeny = defineRequest({
  subject: 'toolplane.v1.executions.deny',
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:execute',
  summary:
    'Deny an execution waiting for approval: nothing runs; its result is the tool error the agent gets, "Error: request to call tool denied. User reason: <reason>" (EXECUTION_DENIED). Anything not pending_approval is EXECUTION_NOT_PENDING.',
  request: z.strictObject({ ...ExecutionRef, reason: z.string().max(4096) }),
  reply: z.object({ execution: ExecutionRecord, result: ToolExecutionResult }),
});

export const ExecutionsSubmitResult = defineRequest({
  subject: 'toolplane.v1.executions.submit-result',
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:execute',
  summary:
    'The outcome of a client-side tool call the runtime ran itself (an execution in awaiting_client): the record completes with it. A second submission, or one for an execution that is not awaiting the client, is EXECUTION_ALREADY_COMPLETED.',
  request: z.strictObject({
    ...ExecutionRef,
    status: ExecutionStatus,
    func_return: z.unknown(),
    stdout: z.array(z.string()).max(10_000).optional(),
    stderr: z.array(z.string()).max(10_000).optional(),
  }),
  reply: z.object({ execution: ExecutionRecord, result: ToolExecutionResult }),
});

const ExecutionEventPayload = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  org_id: OrgId,
  execution_id: ExecutionId,
  agent_id: z.string().nullable(),
  /** The end user the call was made for; null when its request named none (absent from older events: read as null). */
  user_id: z.string().nullable().default(null),
  /** The tool set the call was made through; null when none (absent from older events: read as null). */
  toolset: z.string().nullable().default(null),
  tool_id: ToolId.nullable(),
  tool_name: z.string().nullable(),
  status: ExecutionState,
  mode: z.enum(['sync', 'async']),
  error_code: z.string().nullable(),
  batch_id: z.string().nullable(),
  call_id: z.string().nullable(),
});
export type ExecutionEventPayload = z.infer<typeof ExecutionEventPayload>;

export const ExecutionCompleted = defineEvent({
  subject: 'toolplane.v1.events.execution.completed',
  publishedBy: ['executor'],
  summary: 'An execution succeeded (ran, or its client reported success). The result: executions.get.',
  payload: ExecutionEventPayload,
});
export const ExecutionFailed = defineEvent({
  subject: 'toolplane.v1.events.execution.failed',
  publishedBy: ['executor'],
  summary:
    'An execution failed (the tool raised or timed out, its executor was lost, its client reported an error). The result: executions.get.',
  payload: ExecutionEventPayload,
});
/** `held`: the subject grammar's verb is one lowercase word; the execution's status is pending_approval. */
export const ExecutionHeld = defineEvent({
  subject: 'toolplane.v1.events.execution.held',
  publishedBy: ['executor'],
  summary:
    'A call needs approval: its execution is pending_approval (args: executions.get). approve or deny it before its expires_at.',
  payload: ExecutionEventPayload.extend({ expires_at: z.string() }),
});
export const ExecutionApproved = defineEvent({
  subject: 'toolplane.v1.events.execution.approved',
  publishedBy: ['executor'],
  summary: 'A pending execution was approved (it runs, is queued, or waits for its client).',
  payload: ExecutionEventPayload.extend({ args_corrected: z.boolean() }),
});
export const ExecutionDenied = defineEvent({
  subject: 'toolplane.v1.events.execution.denied',
  publishedBy: ['executor'],
  summary: 'A pending execution was denied: nothing ran.',
  payload: ExecutionEventPayload,
});
export const ExecutionExpired = defineEvent({
  subject: 'toolplane.v1.events.execution.expired',
  publishedBy: ['executor'],
  summary: 'A pending execution was neither approved nor denied within its approval TTL: nothing ran.',
  payload: ExecutionEventPayload,
});

export const EXECUTION_EVENTS = [
  ExecutionCompleted,
  ExecutionFailed,
  ExecutionHeld,
  ExecutionApproved,
  ExecutionDenied,
  ExecutionExpired,
] as const;

/**
 * Internal work queue of async executions: one message per execution to run (its record holds the
 * sealed call), taken by one executor, acknowledged once the outcome is recorded, redelivered to
 * another executor if not (bounded). The record's claim, not the message, decides who runs it.
 */
export const ExecutionWork = defineWorkQueue({
  subject: 'toolplane.internal.v1.work.executions',
  stream: 'TOOLPLANE_EXECUTIONS',
  servedBy: 'executor',
  summary: 'An async execution to run (its id; the call itself is sealed in its record).',
  payload: z.object({ org_id: OrgId, execution_id: ExecutionId }),
});
