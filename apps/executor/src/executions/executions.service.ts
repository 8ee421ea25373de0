import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import {
  ErrorCode,
  type ExecutionEnvResolve,
  FALLBACK_CODES,
  LocalRunnerRun,
  McpToolMetadata,
  Provider,
  McpToolsCall,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type Tool,
  type ToolExecutionResult,
  type ToolsExecute,
  type ToolsExecuteBatch,
  type BatchCallResult,
} from '@toolplane/contracts';
import { currentRequestSignal, MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, SecretMasker } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { ArgumentsService } from './arguments.service';
import { CredentialsClient } from './credentials.client';
import { truncateReturn } from './return-value';
import { runnerOf, runRequestOf } from './run-request';
import { ToolCatalogService } from './tool-catalog.service';

/** Custom tool sources runner-local can run: Python, and TypeScript/JavaScript on Node. */
const RUNNABLE_SOURCE_TYPES = new Set(['python', 'typescript', 'javascript']);

const tracer = trace.getTracer('executor');
type ResolvedEnv = ReplyOf<typeof ExecutionEnvResolve>;
type RunReply = ReplyOf<typeof LocalRunnerRun>;

/** One function per lifecycle step, one span per step. */
async function step<T>(name: string, fn: (span: Span) => Promise<T> | T): Promise<T> {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
      throw e;
    } finally {
      span.end();
    }
  });
}

@Injectable()
export class ExecutionsService {
  private readonly log = new Logger(ExecutionsService.name);

  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly args: ArgumentsService,
    private readonly messaging: MessagingClient,
    private readonly credentials: CredentialsClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async execute(req: RequestOf<typeof ToolsExecute>): Promise<ReplyOf<typeof ToolsExecute>> {
    const started = performance.now();
    const tool = await this.lookup(req.org_id, req);
    await step('validate args', () => this.args.check(tool, req.args));
    return this.run(tool, req, started);
  }

  /**
   * One agent step's calls, with Letta's parallel semantics: every call's tool and arguments are
   * checked first (a call that fails here is answered and never runs); then the calls to tools with
   * `enable_parallel_execution` run concurrently (at most EXECUTE_BATCH_MAX_CONCURRENCY at once),
   * then the others one by one in their order. Results come in the input order; one call's failure
   * is its own result, never the batch's.
   */
  async executeBatch(req: RequestOf<typeof ToolsExecuteBatch>): Promise<ReplyOf<typeof ToolsExecuteBatch>> {
    const max = this.config.EXECUTE_BATCH_MAX_CALLS;
    if (req.calls.length > max) {
      throw new ToolplaneError(ErrorCode.BATCH_TOO_LARGE, `A batch takes at most ${max} calls (this one has ${req.calls.length}): nothing ran`, { max_calls: max, calls: req.calls.length });
    }
    const started = performance.now();
    const results: BatchCallResult[] = new Array(req.calls.length);
    const calls = req.calls.map((c) => ({
      call: c,
      req: {
        org_id: req.org_id,
        ...(c.tool_id ? { tool_id: c.tool_id } : { tool_name: c.tool_name }),
        args: c.args,
        ...(req.agent_id ? { agent_id: req.agent_id } : {}),
        ...(req.env ? { env: req.env } : {}),
        ...(c.timeout_ms ?? req.timeout_ms ? { timeout_ms: c.timeout_ms ?? req.timeout_ms } : {}),
      } as RequestOf<typeof ToolsExecute>,
    }));
    // Checked first, together: tools looked up (cached) and arguments validated; nothing runs yet.
    const checked = await step('check calls', () =>
      Promise.all(
        calls.map(async ({ call, req: one }, i) => {
          try {
            const tool = await this.catalog.find(req.org_id, { id: one.tool_id, name: one.tool_name }).then((f) => f.tool);
            await this.args.check(tool, one.args);
            return tool;
          } catch (e) {
            results[i] = this.failedCall(call.call_id, e, started);
            return undefined;
          }
        }),
      ),
    );
    const runOne = (i: number) =>
      tracer.startActiveSpan(`call ${calls[i]!.call.call_id.slice(0, 64)}`, async (span) => {
        const { call, req: one } = calls[i]!;
        span.setAttributes({ 'toolplane.call_id': call.call_id, 'toolplane.tool.id': checked[i]!.id, 'toolplane.batch.index': i });
        const t0 = performance.now();
        try {
          results[i] = { call_id: call.call_id, ...(await this.run(checked[i]!, one, t0)) };
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof ToolplaneError ? e.code : 'error' });
          results[i] = this.failedCall(call.call_id, e, t0);
        } finally {
          span.end();
        }
      });
    const runnable = checked.flatMap((t, i) => (t ? [i] : []));
    const parallel = runnable.filter((i) => checked[i]!.enable_parallel_execution === true);
    const serial = runnable.filter((i) => checked[i]!.enable_parallel_execution !== true);
    await step('run parallel calls', async (span) => {
      span.setAttribute('toolplane.batch.calls', parallel.length);
      let next = 0;
      const worker = async () => {
        while (next < parallel.length) await runOne(parallel[next++]!);
      };
      await Promise.all(Array.from({ length: Math.min(this.config.EXECUTE_BATCH_MAX_CONCURRENCY, parallel.length) }, worker));
    });
    await step('run sequential calls', async (span) => {
      span.setAttribute('toolplane.batch.calls', serial.length);
      for (const i of serial) await runOne(i);
    });
    return { results };
  }

  /** A call that did not produce a tool result: its error, in the result's shape (never a thrown batch). */
  private failedCall(callId: string, e: unknown, started: number): BatchCallResult {
    const err =
      e instanceof ToolplaneError ? e : (this.log.error(`batch call ${callId.slice(0, 64)} failed: ${(e as Error).stack ?? String(e)}`), new ToolplaneError(ErrorCode.INTERNAL, 'The call failed inside the executor'));
    return {
      call_id: callId,
      status: 'error',
      func_return: null,
      stdout: [],
      stderr: [],
      sandbox_config_fingerprint: null,
      provider: '',
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      trace_id: trace.getActiveSpan()?.spanContext().traceId ?? '',
      error: { code: err.code, message: err.message, retryable: err.retryable },
    };
  }

  private lookup(orgId: string, ref: { tool_id?: string; tool_name?: string }): Promise<Tool> {
    return step('lookup tool', async (span) => {
      const { tool, cached } = await this.catalog.find(orgId, { id: ref.tool_id, name: ref.tool_name });
      span.setAttributes({ 'toolplane.tool.id': tool.id, 'toolplane.tool.name': tool.name ?? '', 'toolplane.cache.hit': cached });
      return tool;
    });
  }

  /** Runs a looked-up tool whose arguments are valid: provider, env, dispatch (with fallback), result. */
  private async run(tool: Tool, req: RequestOf<typeof ToolsExecute>, started: number): Promise<ToolExecutionResult> {
    const traceId = trace.getActiveSpan()?.spanContext().traceId ?? '';
    // external_mcp tools run on their MCP server (through mcp-sync), which holds its own credentials.
    const mcp = tool.tool_type === 'external_mcp';
    let resolved: ResolvedEnv | undefined;
    let run: RunReply;
    let fallback: { from: Provider; code: string; message: string } | undefined;
    if (mcp) {
      const timeoutMs = Math.min(req.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS, this.config.EXECUTE_MAX_TIMEOUT_MS);
      run = await step('dispatch', (span) => {
        span.setAttributes({ 'toolplane.provider': 'mcp', 'toolplane.timeout_ms': timeoutMs });
        return this.dispatchMcp(tool, req, timeoutMs);
      });
    } else {
      this.assertExecutable(tool);
      // The tool's provider (metadata_.sandbox), else the org's default: credentials decides and
      // resolves the env for it, once per call (sandbox vars < webhook < agent secrets < req.env < reserved ids).
      const wanted = providerOf(tool);
      resolved = await step('resolve env', () => this.credentials.resolveEnv(req, tool, wanted));
      const first = resolved.provider;
      try {
        run = await this.dispatchTo(tool, req, resolved, this.timeoutOf(req, resolved));
      } catch (e) {
        // Only an error that proves the tool did not start moves the call, and only along the
        // org's own list: never silently (the result names the provider that failed).
        if (!(e instanceof ToolplaneError) || !FALLBACK_CODES.has(e.code) || resolved.fallback_providers.length === 0) throw e;
        let last: ToolplaneError = e;
        let done: RunReply | undefined;
        for (const next of resolved.fallback_providers) {
          this.log.warn(`provider ${first} could not take tool ${tool.id} (${last.code}): falling back to ${next}`);
          const alt = await step('resolve env', () => this.credentials.resolveEnv(req, tool, next));
          try {
            done = await this.dispatchTo(tool, req, alt, this.timeoutOf(req, alt));
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
    const masker = new SecretMasker(resolved ? resolved.masked_keys.map((k) => resolved!.env[k]!).filter((v) => v !== undefined) : []);
    return step('serialize result', (span) => {
      // Mask before truncating, so a cut can never leave half a secret visible.
      const result: ToolExecutionResult = {
        status: run.status,
        func_return: truncateReturn(masker.value(run.func_return), tool.return_char_limit),
        stdout: run.stdout.map((s) => masker.text(s)),
        stderr: run.stderr.map((s) => masker.text(s)),
        sandbox_config_fingerprint: run.sandbox_config_fingerprint ?? resolved?.sandbox_config_fingerprint ?? null,
        provider: run.provider,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        trace_id: traceId,
        ...(run.error ? { error: { code: run.error.code, message: masker.text(run.error.message) } } : {}),
        ...(fallback ? { fallback_from: fallback.from, fallback_error: { code: fallback.code, message: masker.text(fallback.message) } } : {}),
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

  /** timeout_ms restarts on each progress notification, up to EXECUTE_MAX_TIMEOUT_MS: wait that long. */
  private dispatchMcp(tool: Tool, req: RequestOf<typeof ToolsExecute>, timeoutMs: number): Promise<ReplyOf<typeof McpToolsCall>> {
    const meta = McpToolMetadata.safeParse(tool.metadata_?.mcp);
    if (!meta.success) throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `Tool ${tool.name} (external_mcp) has no MCP server in its metadata_.mcp`);
    const maxTimeoutMs = Math.max(timeoutMs, this.config.EXECUTE_MAX_TIMEOUT_MS);
    return this.messaging.request(
      McpToolsCall,
      { org_id: req.org_id, tool_id: tool.id, mcp: meta.data, args: req.args, ...(req.agent_id ? { agent_id: req.agent_id } : {}), timeout_ms: timeoutMs, max_timeout_ms: maxTimeoutMs },
      { timeoutMs: maxTimeoutMs + this.config.RUNNER_REPLY_MARGIN_MS },
    );
  }

  /** The org's sandbox config sets the default timeout; the request's own timeout_ms wins; both bounded. */
  private timeoutOf(req: RequestOf<typeof ToolsExecute>, resolved: ResolvedEnv): number {
    return Math.min(req.timeout_ms ?? resolved.sandbox_config?.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS, this.config.EXECUTE_MAX_TIMEOUT_MS);
  }

  private dispatchTo(tool: Tool, req: RequestOf<typeof ToolsExecute>, resolved: ResolvedEnv, timeoutMs: number): Promise<RunReply> {
    return step('dispatch', (span) => {
      span.setAttributes({ 'toolplane.provider': resolved.provider, 'toolplane.timeout_ms': timeoutMs });
      return this.dispatch(tool, req, resolved, timeoutMs);
    });
  }

  private async dispatch(tool: Tool, req: RequestOf<typeof ToolsExecute>, resolved: ResolvedEnv, timeoutMs: number): Promise<RunReply> {
    const runner = runnerOf(resolved.provider);
    // If this service gives the call up (shutdown past its grace), the runner is told to stop it.
    const runId = randomUUID();
    const signal = currentRequestSignal();
    const abandon = () => this.messaging.notify(runner.abandoned, { run_ids: [runId] });
    signal?.addEventListener('abort', abandon, { once: true });
    return this.messaging.request(
      runner.run,
      { ...runRequestOf(tool, req, resolved, timeoutMs), run_id: runId },
      { timeoutMs: timeoutMs + this.config.RUNNER_REPLY_MARGIN_MS, unavailableCode: ErrorCode.RUNNER_UNAVAILABLE },
    ).finally(() => signal?.removeEventListener('abort', abandon));
  }
}

/** The provider a tool names in `metadata_.sandbox` (undefined: the org's default). A name that is not a provider is refused. */
export function providerOf(tool: Tool): Provider | undefined {
  const named = tool.metadata_?.sandbox;
  if (named === undefined || named === null) return undefined;
  const p = Provider.safeParse(named);
  if (!p.success) {
    throw new ToolplaneError(ErrorCode.UNSUPPORTED_TOOL, `Tool ${tool.name} names an unknown sandbox provider in metadata_.sandbox (one of ${Provider.options.join(', ')})`, {
      sandbox: String(named).slice(0, 64),
    });
  }
  return p.data;
}

