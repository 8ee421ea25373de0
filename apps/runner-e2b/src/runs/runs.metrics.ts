import { Histogram } from '@toolplane/platform';
import type { SandboxPool } from '../sandboxes/sandbox-pool';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** runner-e2b's metrics (Prometheus text on /metrics): calls by outcome, the pool's sandboxes and what happened to them. */
export class E2bRunnerMetrics {
  private readonly runs = new Map<string, number>();
  private readonly queueWait = new Histogram(BOUNDS);
  private readonly runTime = new Histogram(BOUNDS);
  inFlight = 0;
  queued = 0;

  constructor(private readonly pool: SandboxPool) {}

  recordRun(status: string, errorCode: string | undefined, queueSeconds: number, runSeconds: number): void {
    const key = `status="${status}",code="${errorCode ?? ''}"`;
    this.runs.set(key, (this.runs.get(key) ?? 0) + 1);
    this.queueWait.observe(queueSeconds);
    this.runTime.observe(runSeconds);
  }

  render(): string {
    const out: string[] = [];
    const help = (name: string, type: string, text: string) => out.push(`# HELP ${name} ${text}`, `# TYPE ${name} ${type}`);
    const one = (name: string, type: string, text: string, v: number) => {
      help(name, type, text);
      out.push(`${name} ${v}`);
    };
    const c = this.pool.counters;
    help('toolplane_runner_runs_total', 'counter', 'Calls answered, by status and error code (envelope errors: status="rejected").');
    for (const [k, v] of this.runs) out.push(`toolplane_runner_runs_total{${k}} ${v}`);
    one('toolplane_runner_in_flight', 'gauge', 'Calls being served now.', this.inFlight);
    one('toolplane_runner_queued', 'gauge', 'Calls waiting for a place (E2B_MAX_CONCURRENCY, E2B_MAX_CONCURRENCY_PER_ORG).', this.queued);
    help('toolplane_runner_queue_wait_seconds', 'histogram', 'Time from receiving a call to its command starting (environment, place, sandbox).');
    out.push(...this.queueWait.lines('toolplane_runner_queue_wait_seconds'));
    help('toolplane_runner_run_seconds', 'histogram', 'Time a call spent from its sandbox lease to its report.');
    out.push(...this.runTime.lines('toolplane_runner_run_seconds'));
    one('toolplane_e2b_sandboxes_alive', 'gauge', 'E2B sandboxes in the pool (idle and busy).', this.pool.alive());
    one('toolplane_e2b_sandboxes_building', 'gauge', 'Sandboxes being created and set up.', this.pool.totalBuilding);
    one('toolplane_e2b_sandbox_creates_total', 'counter', 'Sandboxes created (Sandbox.create) and set up.', c.creates);
    one('toolplane_e2b_sandbox_adopted_total', 'counter', 'Sandboxes of an earlier runner found again by their tags and proved clean.', c.adopted);
    one('toolplane_e2b_sandbox_reuses_total', 'counter', 'Calls served by a sandbox that had served a call before.', c.reuses);
    one('toolplane_e2b_sandbox_reaps_total', 'counter', 'Sandboxes killed for being idle past E2B_IDLE_TTL_MS.', c.reaps);
    help('toolplane_e2b_sandbox_kills_total', 'counter', 'Sandboxes killed, by reason (idle, dirty, lost, retired: config changed, evicted, aborted, launcher failed).');
    for (const [reason, v] of c.kills) out.push(`toolplane_e2b_sandbox_kills_total{reason="${reason}"} ${v}`);
    one('toolplane_e2b_environment_build_failures_total', 'counter', 'Environment builds that failed (provider errors, requirements that did not install).', c.buildFailures);
    one('toolplane_e2b_environment_building_answers_total', 'counter', 'Calls answered ENVIRONMENT_BUILDING.', c.buildingAnswers);
    return `${out.join('\n')}\n`;
  }
}
