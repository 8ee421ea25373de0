import { Inject, Injectable } from '@nestjs/common';
import {
  ErrorCode,
  type ExecutionEnvResolve,
  INFRASTRUCTURE_CODES,
  type ProviderRunReply,
  type ReplyOf,
  type Tool,
  ToolplaneError,
  WebFetchWebpage,
  WebSearch,
  type WebSearchArgs,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { z } from 'zod';
import type { ExecutorConfig } from '../executor.config';
import type { CallRequest } from '../calls/call';
import { runCodeCall, type RunCodeLanguage } from './run-code';

type ResolvedEnv = ReplyOf<typeof ExecutionEnvResolve>;
type RunReply = z.output<typeof ProviderRunReply>;

/** What a built-in's result names as its provider when web-tools ran it. */
export const WEB_TOOLS_PROVIDER = 'web-tools';

/** The env var holding an org's/agent's Exa key (as the reference names it). */
const EXA_API_KEY = 'EXA_API_KEY';

export function isWebBuiltin(tool: Tool): boolean {
  return tool.tool_type === 'letta_builtin' && (tool.name === 'fetch_webpage' || tool.name === 'web_search');
}

/**
 * A letta_builtin that runs on a provider runner, as the generated tool and args that run it:
 * run_code (the only one today). Others have no executor here.
 */
export function builtinCall(
  tool: Tool,
  req: CallRequest,
): { tool: Tool; req: CallRequest; language: RunCodeLanguage | undefined } {
  if (tool.name === 'run_code') {
    const call = runCodeCall(tool, req.args);
    return { tool: call.tool, req: { ...req, args: call.args }, language: call.language };
  }
  throw new ToolplaneError(
    ErrorCode.UNSUPPORTED_TOOL,
    `The built-in ${tool.name} has no executor in this version of Toolplane`,
    { tool_type: tool.tool_type, tool: tool.name },
  );
}

/** fetch_webpage and web_search through web-tools (toolplane.internal.v1.web.*), sealed like every internal request. */
@Injectable()
export class WebToolsClient {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async call(tool: Tool, req: CallRequest, resolved: ResolvedEnv, timeoutMs: number): Promise<RunReply> {
    const started = performance.now();
    const key = resolved.env[EXA_API_KEY];
    const exa = key ? { exa_api_key: key } : {};
    const opts = {
      timeoutMs: timeoutMs + this.config.RUNNER_REPLY_MARGIN_MS,
      unavailableCode: ErrorCode.SERVICE_UNAVAILABLE,
    };
    const reply = (
      done: Omit<RunReply, 'duration_ms' | 'provider' | 'sandbox_config_fingerprint' | 'stdout' | 'stderr'>,
    ): RunReply => ({
      ...done,
      stdout: [],
      stderr: [],
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      provider: WEB_TOOLS_PROVIDER,
      sandbox_config_fingerprint: null,
    });
    try {
      const { text } =
        tool.name === 'fetch_webpage'
          ? await this.messaging.request(
              WebFetchWebpage,
              { org_id: req.org_id, url: String(req.args.url ?? ''), ...exa },
              opts,
            )
          : await this.messaging.request(
              WebSearch,
              { org_id: req.org_id, args: req.args as WebSearchArgs, ...exa },
              opts,
            );
      return reply({ status: 'success', func_return: text });
    } catch (e) {
      // web-tools could not be asked or could not answer (INFRASTRUCTURE_CODES): the call fails as an
      // envelope error. Any other typed error is its answer about the page or the search: the tool's
      // error result, with that code.
      if (!(e instanceof ToolplaneError) || INFRASTRUCTURE_CODES.has(e.code)) throw e;
      return reply({ status: 'error', func_return: e.message, error: { code: e.code, message: e.message } });
    }
  }
}
