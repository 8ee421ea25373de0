import { Inject, Injectable, Logger } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import {
  ErrorCode,
  type ExecutionEnvResolve,
  FALLBACK_CODES,
  LocalRunnerRun,
  McpToolMetadata,
  McpToolsCall,
  Provider,
  ToolplaneError,
  type ReplyOf,
  type Tool,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { currentProgressReporter, currentRequestSignal, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, SecretMasker } from '@toolplane/platform';
import { randomUUID } from 'node:crypto';
import { builtinCall, isWebBuiltin, WEB_TOOLS_PROVIDER, WebToolsClient } from '../builtins/builtin-calls';
import { assertLanguage, languagesOf } from '../builtins/run-code';
import { step, type CallRequest } from '../calls/call';
import type { ExecutorConfig } from '../executor.config';
import { CredentialsClient } from './credentials.client';
import { truncateReturn } from './return-value';
import { providerOf, runnerOf, runRequestOf } from './run-request';

/** Custom tool sources runner-local can run: Python, and TypeScript/JavaScript on Node. */
const RUNNABLE_SOURCE_TYPES = new Set(['python', 'typescript', 'javascript']);

type ResolvedEnv = ReplyOf<typeof ExecutionEnvResolve>;
type RunReply = ReplyOf<typeof LocalRunnerRun>;

/**
 * Runs a looked-up tool whose arguments are valid: provider, env, dispatch (with fallback), and
 * the result masked, truncated and timed. Knows nothing of records.
 */
@Injectable()
export class ToolRunner {
  private readonly log = new Logger(ToolRunner.name);

  constructor(
    private readonly messaging: MessagingClient,
    private readonly credentials: CredentialsClient,
    private readonly web: WebToolsClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async run(tool: Tool, req: CallRequest, started: number, executionId: string): Promise<ToolExecutionResult> {
    const traceId = trace.getActiveSpan()?.spanContext().traceId ?? '';
    // external_mcp tools run on their MCP server (through mcp-sync), which holds its own credentials.
    const mcp = tool.tool_type === 'external_mcp';
    let resolved: ResolvedEnv | undefined;
    let run: RunReply;
    let fallback: { from: Provider; code: string; message: string } | undefined;
    if (mcp) {
      const timeoutMs = Math.min(
        req.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS,
        this.config.EXECUTE_MAX_TIMEOUT_MS,
      );
      run = await step('dispatch', (span) => {
        span.setAttributes({ 'toolplane.provider': 'mcp', 'toolplane.timeout_ms': timeoutMs });
        return this.dispatchMcp(tool, req, timeoutMs);
      });
    } else if (isWebBuiltin(tool)) {
      // fetch_webpage / web_search run in web-tools (no service secrets there); the org's/agent's
      // EXA_API_KEY is resolved for the call like any tool's env and travels sealed.
      const env = await step('resolve env', () => this.credentials.resolveEnv(req, tool, undefined));
      resolved = env;
      const timeoutMs = this.timeoutOf(req, env);
      run = await step('dispatch', (span) => {
        span.setAttributes({ 'toolplane.provider': WEB_TOOLS_PROVIDER, 'toolplane.timeout_ms': timeoutMs });
        return this.web.call(tool, req, env, timeoutMs);
      });
    } else {
      // A built-in run_code becomes a generated tool that runs the code (apps/executor/src/builtins/run-code.ts).
      const call = tool.tool_type === 'letta_builtin' ? builtinCall(tool, req) : { tool, req, language: undefined };
      this.assertExecutable(call.tool);
      // The tool's provider (metadata_.sandbox), else the org's default: credentials decides and
      // resolves the env for it, once per call (sandbox vars < webhook < agent < user secrets < req.env < reserved ids).
      const wanted = providerOf(call.tool);
      resolved = await step('resolve env', () => this.credentials.resolveEnv(call.req, call.tool, wanted));
      const first = resolved.provider;
      if (call.language) assertLanguage(call.language, first);
      try {
        run = await this.dispatchTo(call.tool, call.req, resolved, this.timeoutOf(call.req, resolved));
      } catch (e) {
        // Only an error that proves the tool did not start moves the call, and only along the
        // org's own list: never silently (the result names the provider that failed).
        if (!(e instanceof ToolplaneError) || !FALLBACK_CODES.has(e.code) || resolved.fallback_providers.length === 0)
          throw e;
        let last: ToolplaneError = e;
        let done: RunReply | undefined;
        for (const next of resolved.fallback_providers) {
          if (call.language && !languagesOf(next).includes(call.language)) continue;
          this.log.warn(`provider ${first} could not take tool ${tool.id} (${last.code}): falling back to ${next}`);
          const alt = await step('resolve env', () => this.credentials.resolveEnv(call.req, call.tool, next));
          try {
            done = await this.dispatchTo(call.tool, call.req, alt, this.timeoutOf(call.req, alt));
            resolved = alt;
            break;
          } catch (e2) {
            if (!(e2 instanceof ToolplaneError) || !FALLBACK_CODES.has(e2.code)) throw e2;
            last = e2;
          }
        }
        if (!done) throw last;
        run = done;
        fallback = { from: first, code: e.code, message: e.message };
      }
    }
    const masker = new SecretMasker(
      resolved ? resolved.masked_keys.map((k) => resolved!.env[k]!).filter((v) => v !== undefined) : [],
    );
    return step('serialize result', (span) => {
      // Mask before truncating, so a cut can never leave half a secret visible.
      const result: ToolExecutionResult = {
        execution_id: executionId,
        status: run.status,
        func_return: truncateReturn(masker.value(run.func_return), tool.return_char_limit),
        stdout: run.stdout.map((s) => masker.text(s)),
        stderr: run.stderr.map((s) => masker.text(s)),
        sandbox_config_fingerprint: run.sandbox_config_fingerprint ?? resolved?.sandbox_config_fingerprint ?? null,
        provider: run.provider,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        trace_id: traceId,
        ...(run.error ? { error: { code: run.error.code, message: masker.text(run.error.message) } } : {}),
        ...(fallback
          ? {
              fallback_from: fallback.from,
              fallback_error: { code: fallback.code, message: masker.text(fallback.message) },
            }
          : {}),
      };
      span.setAttribute('toolplane.status', result.status);
      if (run.error) this.log.log(`tool ${tool.id} finished with ${run.error.code}`);
      return result;
    });
  }

  private assertExecutable(tool: Tool): void {
    if (tool.tool_type !== 'custom' || !RUNNABLE_SOURCE_TYPES.has(tool.source_type ?? 'python') || !tool.source_code) {
      throw new ToolplaneError(
        ErrorCode.UNSUPPORTED_TOOL,
        `Tool ${tool.name} (type ${tool.tool_type}, source ${tool.source_type ?? 'none'}) has no executor yet`,
        { tool_type: tool.tool_type, source_type: tool.source_type },
      );
    }
  }

  /**
   * timeout_ms restarts on each progress notification, up to EXECUTE_MAX_TIMEOUT_MS: wait that long.
   * Cancelled with this call (the request's signal); its progress is forwarded to this call's caller.
   */
  private dispatchMcp(tool: Tool, req: CallRequest, timeoutMs: number): Promise<ReplyOf<typeof McpToolsCall>> {
    const meta = McpToolMetadata.safeParse(tool.metadata_?.mcp);
    if (!meta.success)
      throw new ToolplaneError(
        ErrorCode.UNSUPPORTED_TOOL,
        `Tool ${tool.name} (external_mcp) has no MCP server in its metadata_.mcp`,
      );
    const maxTimeoutMs = Math.max(timeoutMs, this.config.EXECUTE_MAX_TIMEOUT_MS);
    return this.messaging.request(
      McpToolsCall,
      {
        org_id: req.org_id,
        tool_id: tool.id,
        mcp: meta.data,
        args: req.args,
        ...(req.agent_id ? { agent_id: req.agent_id } : {}),
        ...(req.user_id ? { user_id: req.user_id } : {}),
        timeout_ms: timeoutMs,
        max_timeout_ms: maxTimeoutMs,
      },
      // The MCP server's progress notifications go on to this call's caller, when it asked for progress.
      { timeoutMs: maxTimeoutMs + this.config.RUNNER_REPLY_MARGIN_MS, onProgress: currentProgressReporter() },
    );
  }

  /** The org's sandbox config sets the default timeout; the request's own timeout_ms wins; both bounded. */
  private timeoutOf(req: CallRequest, resolved: ResolvedEnv): number {
    return Math.min(
      req.timeout_ms ?? resolved.sandbox_config?.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS,
      this.config.EXECUTE_MAX_TIMEOUT_MS,
    );
  }

  private dispatchTo(tool: Tool, req: CallRequest, resolved: ResolvedEnv, timeoutMs: number): Promise<RunReply> {
    return step('dispatch', (span) => {
      span.setAttributes({ 'toolplane.provider': resolved.provider, 'toolplane.timeout_ms': timeoutMs });
      return this.dispatch(tool, req, resolved, timeoutMs);
    });
  }

  private async dispatch(tool: Tool, req: CallRequest, resolved: ResolvedEnv, timeoutMs: number): Promise<RunReply> {
    const runner = runnerOf(resolved.provider);
    // If this service gives the call up (shutdown past its grace), the runner is told to stop it.
    const runId = randomUUID();
    const signal = currentRequestSignal();
    const abandon = () => this.messaging.notify(runner.abandoned, { run_ids: [runId] });
    signal?.addEventListener('abort', abandon, { once: true });
    return this.messaging
      .request(
        runner.run,
        { ...runRequestOf(tool, req, resolved, timeoutMs), run_id: runId },
        { timeoutMs: timeoutMs + this.config.RUNNER_REPLY_MARGIN_MS, unavailableCode: ErrorCode.RUNNER_UNAVAILABLE },
      )
      .finally(() => signal?.removeEventListener('abort', abandon));
  }
}
