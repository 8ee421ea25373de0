import { z } from 'zod';
import { JsonObject, OrgId } from './common';
import { defineEvent, defineRequest } from './descriptor';
import { NpmRequirement, PipRequirement, ToolId } from './tool';

const EnvVars = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'env names: letters, digits, _'), z.string().max(32_768))
  .refine((env) => Object.keys(env).length <= 256, { message: 'at most 256 env vars' });

export const ExecutionStatus = z.enum(['success', 'error']);

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

export const ToolExecutionResult = z.object({
  status: ExecutionStatus,
  func_return: z.unknown(),
  stdout: z.array(z.string()),
  stderr: z.array(z.string()),
  sandbox_config_fingerprint: z.string().nullable(),
  provider: z.string(),
  duration_ms: z.number(),
  trace_id: z.string(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type ToolExecutionResult = z.infer<typeof ToolExecutionResult>;

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
      env: EnvVars.optional(),
      timeout_ms: z.number().int().min(1).optional(),
      idempotency_key: z.string().min(1).max(256).optional(),
    })
    .refine((r) => (r.tool_id === undefined) !== (r.tool_name === undefined), {
      message: 'give exactly one of tool_id or tool_name',
    }),
  reply: ToolExecutionResult,
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
      })
      .optional(),
});

/** Internal: the executor hands a resolved call to the local sandbox runner. */
export const LocalRunnerRun = defineRequest({
  subject: 'toolplane.internal.v1.runners.local.run',
  opaque: ['args'],
  visibility: 'internal',
  servedBy: 'runner-local',
  callers: ['executor'],
  summary: 'Run one custom tool call in a local sandbox.',
  request: RunnerRunRequest,
  reply: ProviderRunReply,
});

/**
 * Internal sealed broadcast: the executor gave these calls up (it is shutting down and answered
 * their callers SERVICE_RESTARTING). The runner replica running one stops it and frees its slot.
 */
export const LocalRunAbandoned = defineEvent({
  subject: 'toolplane.internal.v1.events.local-run.abandoned',
  summary: 'The executor gave up these runner calls: stop them.',
  payload: z.object({ run_ids: z.array(z.uuid()).min(1).max(10_000) }),
  sealed: { from: ['executor'], to: 'runner-local' },
});
