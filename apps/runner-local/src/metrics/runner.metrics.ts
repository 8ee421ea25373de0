import { Histogram } from '@toolplane/platform';
import type { DriverStats } from '@toolplane/sandbox';

const BOUNDS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The pool figures /metrics shows: the sandbox driver's stats. */
export type PoolGauges = DriverStats;

/** The runner's metrics: pool size, warm hits/misses, queue wait, run time (Prometheus text on /metrics). */
export class RunnerMetrics {
  private readonly queueWait = new Histogram(BOUNDS);
  private readonly runTime = new Histogram(BOUNDS);
  private readonly runs = new Map<string, number>();
  inFlight = 0;

  /** Calls waiting for a place (the fair queue), by nothing else. */
  queued = 0;

  /** Calls answered ENVIRONMENT_BUILDING (their environment was still being built after RUNNER_BUILD_WAIT_MS). */
  environmentBuilding = 0;

  constructor(
    private readonly driver: string,
    private readonly isolated: boolean,
    private readonly pool: () => PoolGauges | undefined,
    private readonly cgroups: string = 'none',
  ) {}

  recordRun(status: string, errorCode: string | undefined, queueSeconds: number, runSeconds: number): void {
    const key = `status="${status}",code="${errorCode ?? ''}"`;
    this.runs.set(key, (this.runs.get(key) ?? 0) + 1);
    this.queueWait.observe(queueSeconds);
    this.runTime.observe(runSeconds);
  }

  render(): string {
    const out: string[] = [];
    const help = (name: string, type: string, text: string) =>
      out.push(`# HELP ${name} ${text}`, `# TYPE ${name} ${type}`);
    help('toolplane_runner_info', 'gauge', 'Sandbox driver of this runner; isolated="false" is the unsafe mode.');
    out.push(`toolplane_runner_info{driver="${this.driver}",isolated="${this.isolated}"} 1`);
    help(
      'toolplane_runner_cgroups_info',
      'gauge',
      'How calls are limited: cgroup v2 or v1 per call, or none (per-process rlimits only).',
    );
    out.push(`toolplane_runner_cgroups_info{mode="${this.cgroups}"} 1`);
    help(
      'toolplane_runner_queued',
      'gauge',
      'Calls waiting for a place (RUNNER_MAX_CONCURRENCY, RUNNER_MAX_CONCURRENCY_PER_ORG).',
    );
    out.push(`toolplane_runner_queued ${this.queued}`);
    help('toolplane_runner_runs_total', 'counter', 'Calls run, by status and error code.');
    for (const [k, v] of this.runs) out.push(`toolplane_runner_runs_total{${k}} ${v}`);
    help(
      'toolplane_runner_calls_environment_building_total',
      'counter',
      'Calls answered ENVIRONMENT_BUILDING: their environment was still being built after RUNNER_BUILD_WAIT_MS.',
    );
    out.push(`toolplane_runner_calls_environment_building_total ${this.environmentBuilding}`);
    help('toolplane_runner_in_flight', 'gauge', 'Calls running or waiting now.');
    out.push(`toolplane_runner_in_flight ${this.inFlight}`);
    help(
      'toolplane_runner_queue_wait_seconds',
      'histogram',
      'Time from receiving a call to its sandbox starting it (concurrency slot and warm sandbox).',
    );
    out.push(...this.queueWait.lines('toolplane_runner_queue_wait_seconds'));
    help('toolplane_runner_run_seconds', 'histogram', 'Time a call spent in its sandbox.');
    out.push(...this.runTime.lines('toolplane_runner_run_seconds'));
    const p = this.pool();
    if (p) {
      const gauges: Array<[string, string, string, number]> = [
        ['toolplane_runner_pool_slots', 'gauge', 'Warm sandboxes alive (idle + busy + starting).', p.slots],
        ['toolplane_runner_pool_idle_slots', 'gauge', 'Warm sandboxes waiting for a call.', p.idle],
        ['toolplane_runner_pool_busy_slots', 'gauge', 'Sandboxes running a call.', p.busy],
        [
          'toolplane_runner_pool_environments',
          'gauge',
          'Environments (interpreter/virtualenv, network) with a pool.',
          p.environments,
        ],
        ['toolplane_runner_pool_warm_hits_total', 'counter', 'Calls served by an already warm sandbox.', p.warmHits],
        ['toolplane_runner_pool_warm_misses_total', 'counter', 'Calls that had to start a sandbox.', p.warmMisses],
        ['toolplane_runner_pool_slots_started_total', 'counter', 'Sandboxes started.', p.slotsStarted],
        [
          'toolplane_runner_pool_slots_killed_total',
          'counter',
          'Sandboxes ended (timeouts, output limits, crashes, not provably clean, network-enabled after their one call).',
          p.slotsKilled,
        ],
        [
          'toolplane_runner_pool_slots_dirty_total',
          'counter',
          'Sandboxes destroyed after a call because they could not prove themselves clean.',
          p.slotsDirty,
        ],
        ['toolplane_runner_venv_builds_total', 'counter', 'Virtualenvs built.', p.venvBuilds],
        ['toolplane_runner_npm_builds_total', 'counter', 'node_modules trees built.', p.npmBuilds],
        [
          'toolplane_runner_environment_builds_in_progress',
          'gauge',
          'Environment builds (virtualenvs, node_modules trees) running now, or waiting for another runner sharing RUNNER_WORK_ROOT.',
          p.environmentsBuilding,
        ],
        [
          'toolplane_runner_environments_evicted_total',
          'counter',
          'Virtualenvs and node_modules trees evicted under RUNNER_ENV_STORE_MAX_MB.',
          p.environmentsEvicted,
        ],
      ];
      for (const [name, type, text, v] of gauges) {
        help(name, type, text);
        out.push(`${name} ${v}`);
      }
      help(
        'toolplane_runner_environment_builds_total',
        'counter',
        'Environment builds (virtualenvs, node_modules trees) ended, by result.',
      );
      out.push(
        `toolplane_runner_environment_builds_total{result="ok"} ${p.venvBuilds + p.npmBuilds}`,
        `toolplane_runner_environment_builds_total{result="failed"} ${p.environmentBuildsFailed}`,
      );
    }
    return `${out.join('\n')}\n`;
  }
}
