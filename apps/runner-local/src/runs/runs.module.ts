import { Logger, Module } from '@nestjs/common';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import { BwrapDriver, IsolationUnavailableError, ProcessDriver, type SandboxDriver } from '@toolplane/sandbox';
import { SandboxEnvironmentsController } from '../environments/environments.controller';
import { SandboxEnvironmentsService } from '../environments/environments.service';
import type { RunnerConfig } from '../runner-local.config';
import { RunsController } from './runs.controller';
import { RunnerMetrics } from '../metrics/runner.metrics';
import { RunsService, SANDBOX_DRIVER } from './runs.service';

const MB = 1024 * 1024;

/**
 * The sandbox driver: bubblewrap isolation, or — only with RUNNER_ISOLATION=unsafe — a plain
 * subprocess, announced here and in every result. Isolation that does not work refuses the start.
 */
async function createDriver(c: RunnerConfig): Promise<SandboxDriver> {
  const log = new Logger('SandboxDriver');
  if (c.RUNNER_ISOLATION === 'unsafe') {
    log.warn(
      'RUNNER_ISOLATION=unsafe: tools run WITHOUT namespace, seccomp or resource isolation (a plain subprocess). Never use this with untrusted tools.',
    );
    return new ProcessDriver({
      pythonPath: c.RUNNER_PYTHON,
      workRoot: c.RUNNER_WORK_ROOT,
      runAsUid: c.RUNNER_RUN_AS_UID,
      runAsGid: c.RUNNER_RUN_AS_GID,
    });
  }
  const driver = new BwrapDriver({
    bwrapPath: c.RUNNER_BWRAP,
    pythonPath: c.RUNNER_PYTHON,
    workRoot: c.RUNNER_WORK_ROOT,
    runAsUid: c.RUNNER_RUN_AS_UID,
    runAsGid: c.RUNNER_RUN_AS_GID,
    cgroups: { mode: c.RUNNER_CGROUPS },
    network: { enabled: c.RUNNER_ALLOW_NETWORK, slirpPath: c.RUNNER_SLIRP4NETNS, allow: c.RUNNER_EGRESS_ALLOW },
    environments: { maxBytes: c.RUNNER_ENV_STORE_MAX_MB * MB, minIdleMs: c.RUNNER_ENV_STORE_MIN_IDLE_MS },
    pool: {
      warm: c.RUNNER_POOL_WARM,
      warmNetwork: c.RUNNER_ALLOW_NETWORK ? c.RUNNER_POOL_WARM_NET : 0,
      maxPerEnvironment: c.RUNNER_POOL_MAX_PER_ENV,
      maxTotal: c.RUNNER_POOL_MAX_SLOTS,
      idleTtlMs: c.RUNNER_POOL_IDLE_TTL_MS,
      preload: c.RUNNER_POOL_PRELOAD,
      warmEnvironments: c.RUNNER_POOL_WARM_ENVS.map((w) => ({
        pipRequirements: w.pip_requirements,
        warm: w.warm,
        network: w.network,
      })),
    },
    onWarmFailure: (message) => log.error(`a warm environment (RUNNER_POOL_WARM_ENVS) could not be built: ${message}`),
    limits: {
      memoryBytes: c.RUNNER_LIMIT_MEMORY_MB * MB,
      cpuSeconds: c.RUNNER_LIMIT_CPU_SECONDS,
      processes: c.RUNNER_LIMIT_PROCESSES,
      openFiles: c.RUNNER_LIMIT_OPEN_FILES,
      fileBytes: c.RUNNER_LIMIT_FILE_SIZE_MB * MB,
      workDirBytes: c.RUNNER_LIMIT_WORK_DIR_MB * MB,
    },
    pip: {
      indexUrl: c.PIP_INDEX_URL,
      extraIndexUrl: c.PIP_EXTRA_INDEX_URL,
      findLinks: c.RUNNER_PIP_FIND_LINKS,
      noIndex: c.RUNNER_PIP_NO_INDEX,
      onlyBinary: c.RUNNER_PIP_ONLY_BINARY,
    },
    pipTimeoutMs: c.RUNNER_PIP_TIMEOUT_MS,
    nodePath: c.RUNNER_NODE,
    npmDir: c.RUNNER_NPM_DIR,
    npm: { registry: c.RUNNER_NPM_REGISTRY, localDirs: c.RUNNER_NPM_LOCAL_DIRS, offline: c.RUNNER_NPM_OFFLINE },
    npmTimeoutMs: c.RUNNER_NPM_TIMEOUT_MS,
    build: { caFile: c.RUNNER_BUILD_CA_FILE, proxy: c.RUNNER_BUILD_PROXY },
  });
  try {
    await driver.init();
  } catch (e) {
    if (e instanceof IsolationUnavailableError) {
      throw new Error(
        `sandbox isolation is not available: ${e.message}. Fix it, or set RUNNER_ISOLATION=unsafe to run tools without isolation.`,
      );
    }
    throw e;
  }
  const s = driver.stats();
  log.log(
    `bubblewrap isolation ready: ${s.idle} warm sandbox(es), up to ${c.RUNNER_POOL_MAX_PER_ENV} per environment and ${c.RUNNER_POOL_MAX_SLOTS} in all`,
  );
  const cg = driver.cgroups;
  if (cg.mode === 'none') {
    log.warn(
      `cgroups are not delegated to this runner (${cg.reason}): a call's memory and processes are limited per process (RLIMIT_AS, RLIMIT_NPROC), not per call. Run as root (cgroup v1) or give the runner a delegated cgroup v2 subtree (deploy/README.md).`,
    );
  } else {
    log.log(`per-call limits: ${cg.reason} (memory.max, pids.max, equal CPU weight per call)`);
  }
  log.log(
    c.RUNNER_ALLOW_NETWORK
      ? `network-enabled calls: each in its own network namespace (slirp4netns), egress policy allowlist: ${c.RUNNER_EGRESS_ALLOW.join(', ') || 'none'}`
      : 'network-enabled calls are off (RUNNER_ALLOW_NETWORK=false): every call runs without network',
  );
  return driver;
}

@Module({
  controllers: [RunsController, SandboxEnvironmentsController],
  providers: [
    RunsService,
    { provide: SANDBOX_DRIVER, inject: [APP_CONFIG], useFactory: createDriver },
    {
      provide: SandboxEnvironmentsService,
      inject: [SANDBOX_DRIVER, APP_CONFIG, RunnerMetrics],
      useFactory: (driver: SandboxDriver, config: RunnerConfig, metrics: RunnerMetrics) =>
        new SandboxEnvironmentsService(driver, config, metrics),
    },
    {
      provide: RunnerMetrics,
      inject: [SANDBOX_DRIVER, HealthRegistry],
      useFactory: (driver: SandboxDriver, health: HealthRegistry) => {
        const metrics = new RunnerMetrics(
          driver.name,
          driver.isolated,
          () => (driver instanceof BwrapDriver ? driver.stats() : undefined),
          driver instanceof BwrapDriver ? driver.cgroups.mode : 'none',
        );
        health.metrics = () => metrics.render();
        return metrics;
      },
    },
  ],
})
export class RunsModule {}
