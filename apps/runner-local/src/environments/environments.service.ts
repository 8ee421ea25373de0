import { Logger } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type EnvironmentStatus,
  type LocalRunnerEnvironment,
  type RequestOf,
} from '@toolplane/contracts';
import {
  failed,
  type EnvironmentSpec,
  type EnvironmentState,
  type SandboxDriver,
  type SandboxRunOutcome,
} from '@toolplane/sandbox';
import type { RunnerConfig } from '../runner-local.config';
import type { RunnerMetrics } from '../metrics/runner.metrics';

type EnvironmentRequest = Omit<RequestOf<typeof LocalRunnerEnvironment>, 'prepare'>;

/** What a call's environment depends on, from the runner request (run or environment: the same fields). */
export function environmentSpecOf(req: EnvironmentRequest): EnvironmentSpec {
  return {
    sourceType: req.source_type,
    buildScripts: req.sandbox?.build_scripts === true,
    pipRequirements: req.pip_requirements?.map((r) =>
      r.version ? `${r.name}${/^[<>=!~]/.test(r.version) ? '' : '=='}${r.version}` : r.name,
    ),
    npmRequirements: req.npm_requirements?.map((r) => (r.version ? `${r.name}@${r.version}` : r.name)),
  };
}

/**
 * Environments (virtualenvs, node_modules trees) of this runner: their state for the executor
 * (LocalRunnerEnvironment), built in the background when asked, and the gate every call passes —
 * a call never waits for a build longer than RUNNER_BUILD_WAIT_MS (nor its own timeout): it is
 * answered ENVIRONMENT_BUILDING, retryable, while the build goes on.
 */
export class SandboxEnvironmentsService {
  private readonly log = new Logger(SandboxEnvironmentsService.name);

  constructor(
    private readonly driver: SandboxDriver,
    private readonly config: RunnerConfig,
    private readonly metrics: RunnerMetrics,
  ) {}

  /** The state; with `prepare`, the build is started (or a failed one retried) and the state answered at once. */
  async environment(req: RequestOf<typeof LocalRunnerEnvironment>): Promise<EnvironmentStatus> {
    const spec = environmentSpecOf(req);
    const state = req.prepare
      ? await this.driver.prepareEnvironment?.(spec)
      : await this.driver.environmentStatus?.(spec);
    if (req.prepare && state?.status === 'building')
      this.log.log(`building environment ${state.key} for tool ${req.tool_id} of org ${req.org_id}`);
    return statusOf(state ?? { key: null, status: 'ready' });
  }

  /**
   * Before a call runs: undefined once its environment is ready; the call's outcome when its build
   * failed (DEPENDENCY_INSTALL_FAILED naming the package); ENVIRONMENT_BUILDING thrown when the
   * build (started or joined here) did not end within the wait.
   */
  async readyFor(
    spec: EnvironmentSpec,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<SandboxRunOutcome | undefined> {
    if (!this.driver.prepareEnvironment) return undefined;
    const started = performance.now();
    const state = await this.driver.prepareEnvironment(spec, {
      waitMs: Math.min(this.config.RUNNER_BUILD_WAIT_MS, timeoutMs),
      signal,
      retryFailedAfterMs: this.config.RUNNER_BUILD_RETRY_MS,
    });
    // none: the driver is closing; the run reports it.
    if (state.status === 'ready' || state.status === 'none') return undefined;
    if (state.status === 'failed') {
      const message = state.error?.message ?? 'the environment could not be built';
      return dependencyFailed(message, performance.now() - started);
    }
    this.metrics.environmentBuilding++;
    const status = statusOf(state);
    throw new ToolplaneError(
      ErrorCode.ENVIRONMENT_BUILDING,
      `The tool's environment (its ${spec.sourceType === 'typescript' || spec.sourceType === 'javascript' ? 'npm' : 'pip'} requirements) is still being built: retry in a few seconds${status.progress ? ` (${status.progress})` : ''}`,
      {
        provider: 'local',
        status: 'building',
        requirements_hash: status.requirements_hash,
        ...(status.progress ? { progress: status.progress } : {}),
      },
    );
  }
}

function statusOf(s: EnvironmentState): EnvironmentStatus {
  return {
    provider: 'local',
    status: s.status,
    requirements_hash: s.key,
    ...(s.progress ? { progress: s.progress } : {}),
    ...(s.error
      ? {
          error: {
            code: ErrorCode.DEPENDENCY_INSTALL_FAILED,
            message: s.error.message,
            ...(s.error.package ? { package: s.error.package } : {}),
          },
        }
      : {}),
    ...(s.since ? { updated_at: new Date(s.since).toISOString() } : {}),
  };
}

/** The outcome of a call whose environment could not be built (the result-level DEPENDENCY_INSTALL_FAILED). */
function dependencyFailed(message: string, durationMs: number): SandboxRunOutcome {
  return {
    ...failed('dependency_failed', 'DependencyInstallFailed', message),
    durationMs: Math.round(durationMs * 10) / 10,
  };
}
