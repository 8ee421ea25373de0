import { Histogram } from '@toolplane/platform';
import type { SandboxPool } from '../sandboxes/sandbox-pool';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** runner-modal's metrics (Prometheus text on /metrics): calls by outcome, the warm pool and what happened to its sandboxes. */
export class ModalRunnerMetrics {
  private readonly runs = new Map<string, number>();
  private readonly runTime = new Histogram(BOUNDS);
  inFlight = 0;
  queued = 0;

  constructor(private readonly pool: SandboxPool) {}

  recordRun(status: string, errorCode: string | undefined, runSeconds: number): void {
    const key = `status="${status}",code="${errorCode ?? ''}"`;
    this.runs.set(key, (this.runs.get(key) ?? 0) + 1);
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
    one('toolplane_runner_queued', 'gauge', 'Calls waiting for a place (MODAL_MAX_CONCURRENCY, MODAL_MAX_CONCURRENCY_PER_ORG).', this.queued);
    help('toolplane_runner_run_seconds', 'histogram', 'Time a call spent from its arrival to its report.');
    out.push(...this.runTime.lines('toolplane_runner_run_seconds'));
    one('toolplane_modal_sandboxes_alive', 'gauge', 'Modal sandboxes in the pool (idle and busy).', this.pool.alive());
    one('toolplane_modal_sandboxes_creating', 'gauge', 'Sandboxes being created and probed.', this.pool.creating());
    one('toolplane_modal_sandboxes_waiting_for_place', 'gauge', 'Sandbox creations waiting for a place within MODAL_MAX_SANDBOXES / MODAL_MAX_SANDBOXES_PER_ORG.', this.pool.queuedForPlace());
    one('toolplane_modal_sandbox_creates_total', 'counter', 'Sandboxes created, set up and probed ready.', c.creates);
    one('toolplane_modal_pool_hits_total', 'counter', 'Calls that found a warm idle sandbox.', c.hits);
    one('toolplane_modal_cold_starts_total', 'counter', 'Calls that found no free sandbox and waited (for one being created, or one another call freed).', c.coldStarts);
    one('toolplane_modal_calls_on_new_sandbox_total', 'counter', 'Calls that waited and were served by a sandbox created for them (the rest of the cold starts got a freed one).', c.createdFor);
    one('toolplane_modal_sandbox_surge_creates_total', 'counter', 'Sandboxes created ahead of demand while calls waited (beyond one per waiting call).', c.surged);
    one('toolplane_modal_bound_waits_total', 'counter', 'Sandbox creations that had to wait for a place within the sandbox bounds.', c.boundWaits);
    one('toolplane_modal_sandbox_reuses_total', 'counter', 'Calls served by a sandbox that had served a call before.', c.reuses);
    one('toolplane_modal_sandbox_adopted_total', 'counter', 'Sandboxes of an earlier runner found again by their tags and proved clean.', c.adopted);
    one('toolplane_modal_sandbox_reaps_total', 'counter', 'Sandboxes terminated for being idle past MODAL_IDLE_TTL_MS.', c.reaps);
    help('toolplane_modal_sandbox_kills_total', 'counter', 'Sandboxes terminated, by reason (idle, dirty, lost, retired: config changed, evicted: room for another org or environment at a bound, aborted, launcher failed).');
    for (const [reason, v] of c.kills) out.push(`toolplane_modal_sandbox_kills_total{reason="${reason}"} ${v}`);
    return `${out.join('\n')}\n`;
  }
}
