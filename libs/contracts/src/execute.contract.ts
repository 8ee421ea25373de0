import { z } from 'zod';
import { EndUserId, JsonObject, OrgId } from './common';
import { Provider } from './credentials.contract';
import { defineEvent, defineRequest } from './descriptor';
import type { AppName } from './identity';
import { NpmRequirement, PipRequirement, ToolId } from './tool';
import { ToolsetName } from './toolsets.contract';

const EnvVars = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'env names: letters, digits, _'), z.string().max(32_768))
  .refine((env) => Object.keys(env).length <= 256, { message: 'at most 256 env vars' });

export const ExecutionStatus = z.enum(['success', 'error']);

/** The end user a call is made for (defined with the other identifiers: credentials and auth take it too). */
export { EndUserId } from './common';

/** What a provider (runner-local, mcp-sync) answers the executor for one call; the executor masks, truncates and times it. */
export const ProviderRunReply = z.object({
  status: ExecutionStatus,
  func_return: z.unknown(),
  stdout: z.array(z.string()),
  stderr: z.array(z.string()),
  duration_ms: z.number(),
  provider: z.string(),
  sandbox_config_fingerprint: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

/** Why a fallback provider ran: the provider that failed first, and its (typed, PROVIDER_UNAVAILABLE-class) error. */
const FallbackFrom = z.object({ provider: Provider, code: z.string(), message: z.string() });

/** An execution's id: every call gets one (its record, see executions.contract). */
export const EXECUTION_ID = /^exec-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ExecutionId = z.string().regex(EXECUTION_ID, 'an id like exec-<uuid>');

export const ToolExecutionResult = z.object({
  /** The call's execution record (toolplane.v1.executions.get). */
  execution_id: ExecutionId,
  status: ExecutionStatus,
  func_return: z.unknown(),
  stdout: z.array(z.string()),
  stderr: z.array(z.string()),
  sandbox_config_fingerprint: z.string().nullable(),
  provider: z.string(),
  duration_ms: z.number(),
  trace_id: z.string(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /**
   * Present only when the provider chosen for the call could not take it and the org's fallback
   * list sent it to `provider`: names the one that failed, first, and why. Never silent.
   */
  fallback_from: Provider.optional(),
  fallback_error: FallbackFrom.omit({ provider: true }).optional(),
});
export type ToolExecutionResult = z.infer<typeof ToolExecutionResult>;

/**
 * A call taken for later (`mode: "async"`, or an approved async call): its record's state when
 * answered — `queued` for a new call; a retry with the same idempotency key answers the state the
 * first one's record is in. The outcome: toolplane.v1.executions.get, or the execution events.
 */
export const ExecutionAccepted = z.object({
  execution_id: ExecutionId,
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'denied', 'expired']),
});

/**
 * The call needs a human's approval first (through a tool set: the set's requires_approval; else
 * the agent's setting for the tool; else the tool's default_requires_approval): nothing ran. toolplane.v1.executions.approve runs it (the approver
 * may correct the args), .deny gives the agent a tool error instead; past expires_at it expires.
 */
export const ApprovalRequired = z.object({
  status: z.literal('pending_approval'),
  execution_id: ExecutionId,
  tool_id: ToolId,
  tool_name: z.string(),
  args: JsonObject,
  expires_at: z.string(),
});

/**
 * A client-side tool (`tool_type: "client"`): Toolplane never runs it. The runtime runs it and
 * reports its outcome with toolplane.v1.executions.submit-result.
 */
export const AwaitingClient = z.object({
  status: z.literal('awaiting_client'),
  execution_id: ExecutionId,
  tool_id: ToolId,
  tool_name: z.string(),
  args: JsonObject,
});

/** What tools.execute (and executions.approve) answer: the result, or the state the call waits in. */
export const ExecuteReply = z.union([ToolExecutionResult, ExecutionAccepted, ApprovalRequired, AwaitingClient]);
export type ExecuteReply = z.infer<typeof ExecuteReply>;

export const ToolsExecute = defineRequest({
  subject: 'toolplane.v1.tools.execute',
  opaque: ['args'],
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:execute',
  summary: 'Run a tool of the org with the given arguments and return its result, output and status.',
  request: z
    .strictObject({
      org_id: OrgId,
      tool_id: ToolId.optional(),
      tool_name: z.string().min(1).max(64).optional(),
      args: JsonObject.default({}),
      agent_id: z.string().min(1).max(128).optional(),
      /**
       * The published tool set the call is made through (its name; not with agent_id), as the MCP
       * gateway's /mcp/toolsets/<name> does. The tool must be a member of the set now (by id, name
       * or tag): any other is TOOL_NOT_FOUND naming the set, whether or not the org has such a
       * tool; an unknown set is TOOLSET_NOT_FOUND. The call needs approval when the member's
       * requires_approval in toolsets.tools.list says so (the set's requires_approval, else the
       * tool's default). Recorded on its execution (executions.list filters by it) and in its events.
       */
      toolset: ToolsetName.optional(),
      /** The end user the call is made for: recorded on its execution (executions.list filters by it) and in its events. */
      user_id: EndUserId.optional(),
      env: EnvVars.optional(),
      timeout_ms: z.number().int().min(1).optional(),
      /**
       * Per org, for EXECUTION_IDEMPOTENCY_WINDOW_MS (default 24 h): a retry with the same key, tool,
       * args, user_id and toolset answers the recorded outcome without running again (a duplicate
       * arriving while the first runs waits for it); the same key with another tool, other args,
       * another user_id or another toolset (or one where the first had none, or none where it had
       * one) is IDEMPOTENCY_CONFLICT: one end user never gets another's result, and a call through
       * a set never gets the outcome of a call its policy would have held.
       */
      idempotency_key: z.string().min(1).max(256).optional(),
      /** sync: answer with the result. async: answer `{execution_id, status: "queued"}` at once; the call runs from a work queue. */
      mode: z.enum(['sync', 'async']).default('sync'),
    })
    .refine((r) => (r.tool_id === undefined) !== (r.tool_name === undefined), {
      message: 'give exactly one of tool_id or tool_name',
    })
    .refine((r) => r.agent_id === undefined || r.toolset === undefined, {
      message: 'give at most one of agent_id or toolset',
      path: ['toolset'],
    }),
  reply: ExecuteReply,
});

const CallTimeout = z.number().int().min(1);

/** One tool call of a batch: the model's call id (answered with its result), the tool and its arguments. */
const BatchCall = z
  .strictObject({
    call_id: z.string().min(1).max(256),
    tool_id: ToolId.optional(),
    tool_name: z.string().min(1).max(64).optional(),
    args: JsonObject.default({}),
    timeout_ms: CallTimeout.optional(),
  })
  .refine((c) => (c.tool_id === undefined) !== (c.tool_name === undefined), {
    message: 'give exactly one of tool_id or tool_name',
  });

/**
 * A batch call's outcome: a ToolExecutionResult with its call id (a call that could not run says
 * why: `error`, with `retryable`), or — for a call that needs approval or is a client-side tool —
 * the state it waits in, with its call id.
 */
export const BatchCallResult = z.union([
  ToolExecutionResult.extend({
    call_id: z.string(),
    error: z.object({ code: z.string(), message: z.string(), retryable: z.boolean().optional() }).optional(),
  }),
  ApprovalRequired.extend({ call_id: z.string() }),
  AwaitingClient.extend({ call_id: z.string() }),
]);
export type BatchCallResult = z.infer<typeof BatchCallResult>;

export const ToolsExecuteBatch = defineRequest({
  subject: 'toolplane.v1.tools.execute-batch',
  opaque: ['calls.*.args'],
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:execute',
  summary:
    'Run the tool calls of one agent step: calls to tools with enable_parallel_execution run concurrently, then the others one by one in their order; results in the input order, one failure never fails the batch. A call that needs approval (pending_approval) or is a client-side tool (awaiting_client) does not run: its result says so, with its execution_id.',
  request: z
    .strictObject({
      org_id: OrgId,
      agent_id: z.string().min(1).max(128).optional(),
      /** The end user the step is run for: recorded on every call's execution and in its events. */
      user_id: EndUserId.optional(),
      calls: z.array(BatchCall).min(1).max(1024),
      env: EnvVars.optional(),
      /** Each call's timeout unless the call names its own. */
      timeout_ms: CallTimeout.optional(),
    })
    .refine((r) => new Set(r.calls.map((c) => c.call_id)).size === r.calls.length, {
      message: 'call_id: each call of a batch has its own',
    }),
  reply: z.object({ results: z.array(BatchCallResult) }),
});

/**
 * The one runner contract: every provider's runner serves `toolplane.internal.v1.runners.<provider>.run`
 * with this request and reply; what is provider-specific travels only in the typed `sandbox` block.
 */
const RunnerRunRequest = z.strictObject({
  org_id: OrgId,
  tool_id: ToolId,
  /** The call's id: the executor names it to cancel a call it gave up (LocalRunAbandoned). */
  run_id: z.uuid().optional(),
  function_name: z.string().min(1),
  source_code: z.string().min(1),
  source_type: z.string(),
  args: JsonObject,
  agent_id: z.string().optional(),
  /**
   * The call's final env, as the credentials service resolved it (its one owner: layers and the
   * reserved ids applied there, RESERVED_ENV_NAMES last): the runner runs the tool with exactly this.
   */
  env: z.record(z.string(), z.string()),
  /**
   * The provider's own credentials for this org (e2b: E2B_API_KEY; modal: MODAL_TOKEN_ID/SECRET),
   * from the org's provider-scoped secrets: the runner uses them to reach its cloud; they never
   * enter the tool's env. Absent: the runner's own configured credentials, if any.
   */
  provider_credentials: z.record(z.string(), z.string()).optional(),
  /** The org's sandbox config for this provider, by fingerprint (null: none): remote runners key their sandboxes by it. */
  sandbox_config_fingerprint: z.string().nullable().optional(),
  /** Names in `env` whose values the runner masks in stdout, stderr, the return value and errors, before anything is cut. */
  masked_keys: z.array(z.string()).max(1024).optional(),
  timeout_ms: z.number().int().min(1),
  /** The tool's pip requirements plus the sandbox config's: the call runs in their virtualenv. */
  pip_requirements: z.array(PipRequirement).optional(),
  /** TypeScript/JavaScript tools (`source_type` typescript/javascript): the call runs with their node_modules tree. */
  npm_requirements: z.array(NpmRequirement).optional(),
  /** Sandbox-config overrides of the runner's default limits. */
  sandbox: z
    .strictObject({
      network: z.boolean().optional(),
      memory_mb: z.number().int().min(16).optional(),
      cpu_seconds: z.number().int().min(1).optional(),
      processes: z.number().int().min(1).optional(),
      open_files: z.number().int().min(16).optional(),
      file_size_mb: z.number().int().min(1).optional(),
      work_dir_mb: z.number().int().min(1).optional(),
      max_output_bytes: z.number().int().min(1024).optional(),
      /** Let package builds run build scripts (npm lifecycle scripts; sdists when the runner installs wheels only). */
      build_scripts: z.boolean().optional(),
      /** Remote providers: the sandbox template (E2B template id / Modal image). */
      template: z.string().min(1).max(256).optional(),
      /** Remote providers: vCPUs of the sandbox. */
      cpu: z.number().min(0.1).max(64).optional(),
      /** Remote providers: calls one sandbox may run at once (default 1: never two calls in one sandbox). */
      calls_per_sandbox: z.number().int().min(1).max(64).optional(),
    })
    .optional(),
});

/** The state of a tool's environment (its pip/npm requirements built) on the provider that runs it. */
export const EnvironmentStatus = z.object({
  provider: Provider,
  /** none: never asked for on this runner; building; ready; failed (the next prepare or call tries again). */
  status: z.enum(['none', 'building', 'ready', 'failed']),
  /** The requirements' hash (null: the tool needs no packages: always ready). */
  requirements_hash: z.string().nullable(),
  /** What the build is doing, when the builder says (e.g. the last line of pip's output). */
  progress: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string(), package: z.string().optional() }).optional(),
  /** When the status last changed (ISO 8601). */
  updated_at: z.string().optional(),
});
export type EnvironmentStatus = z.infer<typeof EnvironmentStatus>;

/** What a runner needs to find or build a call's environment: the run request's environment fields. */
const RunnerEnvironmentRequest = RunnerRunRequest.pick({
  org_id: true,
  tool_id: true,
  source_type: true,
  pip_requirements: true,
  npm_requirements: true,
  sandbox: true,
  provider_credentials: true,
  sandbox_config_fingerprint: true,
}).extend({
  /** Start building it in the background when it is not built yet (the reply is the state at once). */
  prepare: z.boolean().default(false),
});

export const ToolsEnvironment = defineRequest({
  subject: 'toolplane.v1.tools.environment',
  visibility: 'public',
  servedBy: 'executor',
  scope: 'tools:read',
  summary:
    "The state of a tool's environment (its pip/npm requirements built) on the provider that runs it; `prepare: true` starts the build when it is missing or failed.",
  request: z
    .strictObject({
      org_id: OrgId,
      tool_id: ToolId.optional(),
      tool_name: z.string().min(1).max(64).optional(),
      prepare: z.boolean().default(false),
    })
    .refine((r) => (r.tool_id === undefined) !== (r.tool_name === undefined), {
      message: 'give exactly one of tool_id or tool_name',
    }),
  reply: z.object({ environment: EnvironmentStatus }),
});

/** The app that serves each provider's runner subject. */
export const RUNNER_APPS: Readonly<Partial<Record<Provider, AppName>>> = {
  local: 'runner-local',
  e2b: 'runner-e2b',
  modal: 'runner-modal',
};

function runnerRun<A extends AppName>(provider: Provider, app: A, summary: string) {
  return defineRequest({
    subject: `toolplane.internal.v1.runners.${provider}.run`,
    opaque: ['args'],
    visibility: 'internal',
    servedBy: app,
    callers: ['executor'],
    summary,
    request: RunnerRunRequest,
    reply: ProviderRunReply,
  });
}

function runnerEnvironment<A extends AppName>(provider: Provider, app: A) {
  return defineRequest({
    subject: `toolplane.internal.v1.runners.${provider}.environment`,
    visibility: 'internal',
    servedBy: app,
    callers: ['executor'],
    summary: `The state of a call's environment on the ${provider} runner; with prepare, build it in the background.`,
    request: RunnerEnvironmentRequest,
    reply: EnvironmentStatus,
  });
}

export const LocalRunnerEnvironment = runnerEnvironment('local', 'runner-local');
export const E2bRunnerEnvironment = runnerEnvironment('e2b', 'runner-e2b');
export const ModalRunnerEnvironment = runnerEnvironment('modal', 'runner-modal');

/** Internal: the executor hands a resolved call to the local sandbox runner. */
export const LocalRunnerRun = runnerRun('local', 'runner-local', 'Run one custom tool call in a local sandbox.');
/** Internal: the executor hands a resolved call to the E2B runner. */
export const E2bRunnerRun = runnerRun('e2b', 'runner-e2b', 'Run one custom tool call in an E2B sandbox.');
/** Internal: the executor hands a resolved call to the Modal runner. */
export const ModalRunnerRun = runnerRun('modal', 'runner-modal', 'Run one custom tool call in a warm Modal sandbox.');

function runAbandoned<A extends AppName>(provider: Provider, app: A) {
  return defineEvent({
    subject: `toolplane.internal.v1.events.${provider}-run.abandoned`,
    publishedBy: ['executor'],
    summary: `The executor gave up these ${provider} runner calls: stop them.`,
    payload: z.object({ run_ids: z.array(z.uuid()).min(1).max(10_000) }),
    sealed: { from: ['executor'], to: app },
  });
}

/**
 * Internal sealed broadcast: the executor gave these calls up (it is shutting down and answered
 * their callers SERVICE_RESTARTING). The runner replica running one stops it and frees its slot.
 */
export const LocalRunAbandoned = runAbandoned('local', 'runner-local');
export const E2bRunAbandoned = runAbandoned('e2b', 'runner-e2b');
export const ModalRunAbandoned = runAbandoned('modal', 'runner-modal');

/** Each deployable provider's run and environment subjects and abandonment broadcast. */
export const RUNNERS = {
  local: { run: LocalRunnerRun, environment: LocalRunnerEnvironment, abandoned: LocalRunAbandoned },
  e2b: { run: E2bRunnerRun, environment: E2bRunnerEnvironment, abandoned: E2bRunAbandoned },
  modal: { run: ModalRunnerRun, environment: ModalRunnerEnvironment, abandoned: ModalRunAbandoned },
} as const;
export type RunnerProvider = keyof typeof RUNNERS;
