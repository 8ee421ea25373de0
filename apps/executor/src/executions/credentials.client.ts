import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, ExecutionEnvResolve, ToolplaneError, type Provider, type ReplyOf, type Tool } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';

export interface CallRef {
  org_id: string;
  agent_id?: string;
  env?: Record<string, string>;
}

/** Asks the credentials service, once per call and within a bounded time, for the call's env. */
@Injectable()
export class CredentialsClient {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async resolveEnv(call: CallRef, tool: Tool, provider: Provider): Promise<ReplyOf<typeof ExecutionEnvResolve>> {
    try {
      return await this.messaging.request(
        ExecutionEnvResolve,
        {
          org_id: call.org_id,
          ...(call.agent_id ? { agent_id: call.agent_id } : {}),
          tool_id: tool.id,
          tool_name: tool.name,
          project_id: tool.project_id,
          provider,
          ...(call.env ? { env: call.env } : {}),
        },
        { timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS },
      );
    } catch (e) {
      // Without its credentials a call must not run: a silent empty env is the bug this prevents.
      if (e instanceof ToolplaneError && (e.code === ErrorCode.SERVICE_UNAVAILABLE || e.code === ErrorCode.REQUEST_TIMEOUT)) {
        throw new ToolplaneError(ErrorCode.CREDENTIALS_UNAVAILABLE, `The credentials service did not resolve the env: ${e.message}`, e.details);
      }
      throw e;
    }
  }
}
