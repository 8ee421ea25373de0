import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import {
  ErrorCode,
  ToolCreated,
  ToolplaneError,
  ToolUpdated,
  type EnvironmentStatus,
  type ReplyOf,
  type RequestOf,
  type Tool,
  type ToolsEnvironment,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';
import { CredentialsClient } from '../executions/credentials.client';
import { environmentRequestOf, providerOf, runnerOf } from '../executions/run-request';
import { ToolCatalogService } from '../executions/tool-catalog.service';

/** The queue group of the upsert subscription: one executor replica prepares each upserted tool. */
const PREPARE_QUEUE = 'executor';

/**
 * A tool's environment (its pip/npm requirements built) on the provider that runs it: its state
 * (toolplane.v1.tools.environment), and its build started as soon as the tool is created or
 * updated — by one executor replica, asking the runner of the provider that will run the tool —
 * so that calls find it ready instead of building it on their hot path.
 */
@Injectable()
export class EnvironmentsService implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(EnvironmentsService.name);
  private sub?: { unsubscribe(): void };

  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly credentials: CredentialsClient,
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  onModuleInit(): void {
    // One replica of the group prepares each created or updated tool's environment. Each replica
    // checks replays against its own window (EventVerifier), so a genuine event published again
    // within SERVICE_CLOCK_SKEW_MS may be handled once by each replica instead of once. Harmless
    // here, hence no shared seen-set (a KV write per event, new JetStream permissions): preparing
    // is idempotent — the runner starts or joins one build per environment, keyed by the
    // requirements, and leaves a ready or building one as it is — so a replay of even an older
    // update asks again for an environment already asked for. The most it does, retry a failed
    // build, is what toolplane.v1.tools.environment with `prepare: true` lets an org token
    // (tools:read) do; and on the deployed NATS only the registry's user may publish these subjects.
    this.sub = this.messaging.onEvents([ToolCreated, ToolUpdated], (_e, p) => void this.onToolEvent(p.org_id, p.tool), {
      queue: PREPARE_QUEUE,
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  async environment(req: RequestOf<typeof ToolsEnvironment>): Promise<ReplyOf<typeof ToolsEnvironment>> {
    const { tool } = await this.catalog.find(req.org_id, { id: req.tool_id, name: req.tool_name });
    return { environment: await this.stateOf(tool, req.org_id, req.prepare) };
  }

  /**
   * Tools that run no packages in a sandbox (external_mcp, built-ins, custom tools without
   * requirements, the org's sandbox config's included) are always ready (requirements_hash null);
   * the others are asked of the runner of the provider an execute would pick.
   */
  private async stateOf(tool: Tool, orgId: string, prepare: boolean): Promise<EnvironmentStatus> {
    if (tool.tool_type !== 'custom')
      return { provider: providerOf(tool) ?? 'local', status: 'ready', requirements_hash: null };
    const resolved = await this.credentials.resolveEnv({ org_id: orgId }, tool, providerOf(tool));
    const request = environmentRequestOf(tool, orgId, resolved);
    if (!request.pip_requirements && !request.npm_requirements)
      return { provider: resolved.provider, status: 'ready', requirements_hash: null };
    return this.messaging.request(
      runnerOf(resolved.provider).environment,
      { ...request, prepare },
      { timeoutMs: this.config.RUNNER_ENVIRONMENT_TIMEOUT_MS, unavailableCode: ErrorCode.RUNNER_UNAVAILABLE },
    );
  }

  /** A created or updated tool with packages: its environment is prepared (idempotent: a ready or building one is left as it is). */
  private async onToolEvent(orgId: string, tool: Tool): Promise<void> {
    if (tool.tool_type !== 'custom' || !(tool.pip_requirements?.length || tool.npm_requirements?.length)) {
      this.log.debug(`tool ${tool.id} of org ${orgId} has no packages: no environment to prepare`);
      return;
    }
    try {
      const env = await this.stateOf(tool, orgId, true);
      this.log.log(
        `environment of tool ${tool.id} (org ${orgId}) on ${env.provider}: ${env.status}${env.requirements_hash ? ` (${env.requirements_hash})` : ''}`,
      );
    } catch (e) {
      const why = e instanceof ToolplaneError ? `${e.code}: ${e.message}` : 'internal error';
      this.log.warn(`could not prepare the environment of tool ${tool.id} (org ${orgId}): ${why}`);
    }
  }
}
