import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import {
  ErrorCode,
  type ExecutionEnvResolve,
  LocalRunAbandoned,
  LocalRunnerRun,
  McpToolMetadata,
  McpToolsCall,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type SandboxSettings,
  type Tool,
  type ToolExecutionResult,
  type ToolsExecute,
} from '@toolplane/contracts';
import { currentRequestSignal, MessagingClient } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, SecretMasker } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { ArgumentsService } from './arguments.service';
import { CredentialsClient } from './credentials.client';
import { truncateReturn } from './return-value';
import { ToolCatalogService } from './tool-catalog.service';

/** Custom tool sources runner-local can run: Python, and TypeScript/JavaScript on Node. */
const RUNNABLE_SOURCE_TYPES = new Set(['python', 'typescript', 'javascript']);

const tracer = trace.getTracer('executor');
const NO_ENV: ReplyOf<typeof ExecutionEnvResolve> = { env: {}, masked_keys: [], sandbox_config_fingerprint: null, sandbox_config: null };

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
    const traceId = trace.getActiveSpan()?.spanContext().traceId ?? '';
    const tool = await step('lookup tool', async (span) => {
      const { tool, cached } = await this.catalog.find(req.org_id, { id: req.tool_id, name: req.tool_name });
      span.setAttributes({ 'toolplane.tool.id': tool.id, 'toolplane.tool.name': tool.name ?? '', 'toolplane.cache.hit': cached });
      return tool;
    });
    await step('validate args', () => this.args.check(tool, req.args));
    // external_mcp tools run on their MCP server (through mcp-sync), which holds its own credentials.
    const mcp = tool.tool_type === 'external_mcp';
    if (!mcp) this.assertExecutable(tool);
    // Once per call, before dispatch: sandbox vars < webhook < agent secrets < req.env < reserved ids.
    const resolved = mcp ? NO_ENV : await step('resolve env', () => this.credentials.resolveEnv(req, tool, 'local'));
    // The org's sandbox config sets the default timeout; the request's own timeout_ms wins.
    const timeoutMs = Math.min(req.timeout_ms ?? resolved.sandbox_config?.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS, this.config.EXECUTE_MAX_TIMEOUT_MS);
    const masker = new SecretMasker(resolved.masked_keys.map((k) => resolved.env[k]!).filter((v) => v !== undefined));
    const run = await step('dispatch', async (span) => {
      span.setAttributes({ 'toolplane.provider': mcp ? 'mcp' : 'local', 'toolplane.timeout_ms': timeoutMs });
      return mcp ? this.dispatchMcp(tool, req, timeoutMs) : this.dispatch(tool, req, resolved, timeoutMs);
    });
    return step('serialize result', (span) => {
      // Mask before truncating, so a cut can never leave half a secret visible.
      const result: ToolExecutionResult = {
        status: run.status,
        func_return: truncateReturn(masker.value(run.func_return), tool.return_char_limit),
        stdout: run.stdout.map((s) => masker.text(s)),
        stderr: run.stderr.map((s) => masker.text(s)),
        sandbox_config_fingerprint: run.sandbox_config_fingerprint ?? resolved.sandbox_config_fingerprint,
        provider: run.provider,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        trace_id: traceId,
        ...(run.error ? { error: { code: run.error.code, message: masker.text(run.error.message) } } : {}),
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

  private async dispatch(
    tool: Tool,
    req: RequestOf<typeof ToolsExecute>,
    resolved: ReplyOf<typeof ExecutionEnvResolve>,
    timeoutMs: number,
  ): Promise<ReplyOf<typeof LocalRunnerRun>> {
    const settings = resolved.sandbox_config;
    const functionName = (typeof tool.json_schema?.name === 'string' ? tool.json_schema.name : undefined) ?? tool.name!;
    // The final env has one owner, the credentials service (layers, reserved ids last): passed on as it is.
    const env = resolved.env;
    const pip = mergePipRequirements(tool.pip_requirements ?? [], settings?.pip_requirements ?? []);
    const sandbox = sandboxOverrides(settings);
    // If this service gives the call up (shutdown past its grace), the runner is told to stop it.
    const runId = randomUUID();
    const signal = currentRequestSignal();
    const abandon = () => this.messaging.notify(LocalRunAbandoned, { run_ids: [runId] });
    signal?.addEventListener('abort', abandon, { once: true });
    return this.messaging.request(
      LocalRunnerRun,
      {
        org_id: req.org_id,
        tool_id: tool.id,
        run_id: runId,
        function_name: functionName,
        source_code: tool.source_code!,
        source_type: tool.source_type ?? 'python',
        args: req.args,
        ...(req.agent_id ? { agent_id: req.agent_id } : {}),
        env,
        ...(resolved.masked_keys.length ? { masked_keys: resolved.masked_keys } : {}),
        timeout_ms: timeoutMs,
        ...(pip.length && (tool.source_type ?? 'python') === 'python' ? { pip_requirements: pip } : {}),
        ...(sandbox ? { sandbox } : {}),
        ...(tool.npm_requirements?.length ? { npm_requirements: tool.npm_requirements } : {}),
      },
      { timeoutMs: timeoutMs + this.config.RUNNER_REPLY_MARGIN_MS, unavailableCode: ErrorCode.RUNNER_UNAVAILABLE },
    ).finally(() => signal?.removeEventListener('abort', abandon));
  }
}

type PipRequirements = NonNullable<Tool['pip_requirements']>;

/**
 * The tool's pip requirements plus the sandbox config's; a package named by both takes the
 * tool's version (names compared as pip does: case-insensitive, `-`/`_`/`.` alike).
 */
export function mergePipRequirements(fromTool: PipRequirements, fromConfig: PipRequirements): PipRequirements {
  const key = (n: string) => n.toLowerCase().replace(/[-_.]+/g, '-');
  const byName = new Map(fromConfig.map((r) => [key(r.name), r]));
  for (const r of fromTool) byName.set(key(r.name), r);
  return [...byName.values()];
}

/** The sandbox config's settings the local runner applies per call (`cpu` and `template` are for cloud providers). */
export function sandboxOverrides(settings: SandboxSettings | null): RequestOf<typeof LocalRunnerRun>['sandbox'] | undefined {
  if (!settings) return undefined;
  const out: NonNullable<RequestOf<typeof LocalRunnerRun>['sandbox']> = {};
  if (settings.memory_mb !== undefined) out.memory_mb = settings.memory_mb;
  if (settings.network !== undefined) out.network = settings.network === 'egress';
  if (settings.build_scripts !== undefined) out.build_scripts = settings.build_scripts;
  return Object.keys(out).length ? out : undefined;
}
