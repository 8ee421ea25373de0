import { Inject, Injectable, Logger } from '@nestjs/common';
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import {
  ErrorCode,
  LocalRunnerRun,
  McpToolMetadata,
  McpToolsCall,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type Tool,
  type ToolExecutionResult,
  type ToolsExecute,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { ArgumentsService } from './arguments.service';
import { CredentialsClient } from './credentials.client';
import { SecretMasker } from './masking';
import { truncateReturn } from './return-value';
import { ToolCatalogService } from './tool-catalog.service';

const tracer = trace.getTracer('executor');
const NO_ENV = { env: {} as Record<string, string>, masked_keys: [] as string[], sandbox_config_fingerprint: null };

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
    const timeoutMs = Math.min(req.timeout_ms ?? this.config.EXECUTE_DEFAULT_TIMEOUT_MS, this.config.EXECUTE_MAX_TIMEOUT_MS);

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
    const masker = new SecretMasker(resolved.masked_keys.map((k) => resolved.env[k]!).filter((v) => v !== undefined));
    const run = await step('dispatch', async (span) => {
      span.setAttributes({ 'toolplane.provider': mcp ? 'mcp' : 'local', 'toolplane.timeout_ms': timeoutMs });
      return mcp ? this.dispatchMcp(tool, req, timeoutMs) : this.dispatch(tool, req, resolved.env, timeoutMs);
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
    if (tool.tool_type !== 'custom' || (tool.source_type ?? 'python') !== 'python' || !tool.source_code) {
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
    resolvedEnv: Record<string, string>,
    timeoutMs: number,
  ): Promise<ReplyOf<typeof LocalRunnerRun>> {
    const functionName = (typeof tool.json_schema?.name === 'string' ? tool.json_schema.name : undefined) ?? tool.name!;
    // Reserved variables come last (credentials already put them last; this keeps it so here too).
    const env: Record<string, string> = {
      ...resolvedEnv,
      TOOLPLANE_ORG_ID: req.org_id,
      TOOLPLANE_TOOL_ID: tool.id,
      ...(req.agent_id ? { TOOLPLANE_AGENT_ID: req.agent_id } : {}),
    };
    return this.messaging.request(
      LocalRunnerRun,
      {
        org_id: req.org_id,
        tool_id: tool.id,
        function_name: functionName,
        source_code: tool.source_code!,
        source_type: tool.source_type ?? 'python',
        args: req.args,
        ...(req.agent_id ? { agent_id: req.agent_id } : {}),
        env,
        timeout_ms: timeoutMs,
        ...(tool.pip_requirements?.length ? { pip_requirements: tool.pip_requirements } : {}),
      },
      { timeoutMs: timeoutMs + this.config.RUNNER_REPLY_MARGIN_MS, unavailableCode: ErrorCode.RUNNER_UNAVAILABLE },
    );
  }
}
