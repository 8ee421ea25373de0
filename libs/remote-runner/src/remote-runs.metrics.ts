import { Histogram } from '@toolplane/platform';
import type { RemotePool } from './remote-pool';
import type { RemoteEnvironmentRequest, RemoteProvider } from './remote-provider';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** A remote runner's metrics (Prometheus text on /metrics): calls by outcome, the pool's sandboxes and what happened to them. */
export class RemoteRunnerMetrics {
  private readonly runs = new Map<string, number>();
  private readonly queueWait = new Histogram(BOUNDS);
  private readonly runTime = new Histogram(BOUNDS);
  inFlight = 0;
  queued = 0;

  constructor(
    private readonly provider: Pick<RemoteProvider<any, unknown>, 'name' | 'label' | 'configPrefix'>,
    private readonly pool: RemotePool<RemoteEnvironmentRequest, unknown>,
  ) {}

  /** A call answered: `queueSeconds` from its arrival to its command starting (environment, place, sandbox), `runSeconds` from its lease to its report. */
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
    const one = (name: string, type: string, text: string, v: number) => {
      help(name, type, text);
      out.push(`${name} ${v}`);
    };
    const { name: p, label, configPrefix: env } = this.provider;
    const c = this.pool.counters;
    help(
      'toolplane_runner_runs_total',
      'counter',
      'Calls answered, by status and error code (envelope errors: status="rejected").',
    );
    for (const [k, v] of this.runs) out.push(`toolplane_runner_runs_total{${k}} ${v}`);
    one('toolplane_runner_in_flight', 'gauge', 'Calls being served now.', this.inFlight);
    one(
      'toolplane_runner_queued',
      'gauge',
      `Calls waiting for a place (${env}_MAX_CONCURRENCY, ${env}_MAX_CONCURRENCY_PER_ORG).`,
      this.queued,
    );
    help(
      'toolplane_runner_queue_wait_seconds',
      'histogram',
      'Time from receiving a call to its command starting (environment, place, sandbox).',
    );
    out.push(...this.queueWait.lines('toolplane_runner_queue_wait_seconds'));
    help('toolplane_runner_run_seconds', 'histogram', 'Time a call spent from its sandbox lease to its report.');
    out.push(...this.runTime.lines('toolplane_runner_run_seconds'));
    one(
      `toolplane_${p}_sandboxes_alive`,
      'gauge',
      `${label} sandboxes in the pool (idle and busy).`,
      this.pool.alive(),
    );
    one(`toolplane_${p}_sandboxes_creating`, 'gauge', 'Sandboxes being created and set up.', this.pool.creating());
    one(
      `toolplane_${p}_sandboxes_building`,
      'gauge',
      'Sandboxes being created and set up, and environments looking for their sandboxes of an earlier runner.',
      this.pool.building(),
    );
    one(
      `toolplane_${p}_sandboxes_waiting_for_place`,
      'gauge',
      `Sandbox creations waiting for a place within ${env}_MAX_SANDBOXES / ${env}_MAX_SANDBOXES_PER_ORG.`,
      this.pool.queuedForPlace(),
    );
    one(`toolplane_${p}_sandbox_creates_total`, 'counter', 'Sandboxes created, set up and proved clean.', c.creates);
    one(`toolplane_${p}_pool_hits_total`, 'counter', 'Calls that found a free sandbox at once.', c.hits);
    one(
      `toolplane_${p}_cold_starts_total`,
      'counter',
      'Calls that found no free sandbox and waited (for one being created, or one another call freed).',
      c.coldStarts,
    );
    one(
      `toolplane_${p}_calls_on_new_sandbox_total`,
      'counter',
      'Calls that waited and were served by a sandbox created for them (the rest of the cold starts got a freed one).',
      c.createdFor,
    );
    one(
      `toolplane_${p}_sandbox_surge_creates_total`,
      'counter',
      'Sandboxes created ahead of demand while calls waited (beyond one per waiting call).',
      c.surged,
    );
    one(
      `toolplane_${p}_bound_waits_total`,
      'counter',
      'Sandbox creations that had to wait for a place within the sandbox bounds.',
      c.boundWaits,
    );
    one(
      `toolplane_${p}_sandbox_reuses_total`,
      'counter',
      'Calls served by a sandbox that had served a call before.',
      c.reuses,
    );
    one(
      `toolplane_${p}_sandbox_adopted_total`,
      'counter',
      'Sandboxes of an earlier runner found again by their tags and proved clean.',
      c.adopted,
    );
    one(
      `toolplane_${p}_sandbox_reaps_total`,
      'counter',
      `Sandboxes killed for being idle past ${env}_IDLE_TTL_MS.`,
      c.reaps,
    );
    help(
      `toolplane_${p}_sandbox_kills_total`,
      'counter',
      'Sandboxes killed, by reason (idle, dirty, lost, retired: config changed, evicted: room for another org or environment at a bound, aborted, launcher failed).',
    );
    for (const [reason, v] of c.kills) out.push(`toolplane_${p}_sandbox_kills_total{reason="${reason}"} ${v}`);
    one(
      `toolplane_${p}_environment_build_failures_total`,
      'counter',
      'Sandbox builds that failed (provider errors, requirements that did not install).',
      c.buildFailures,
    );
    one(
      `toolplane_${p}_environment_building_answers_total`,
      'counter',
      'Calls answered ENVIRONMENT_BUILDING or PROVIDER_RATE_LIMITED after waiting for their environment.',
      c.buildingAnswers,
    );
    return `${out.join('\n')}\n`;
  }
}
