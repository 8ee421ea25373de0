import type { WorkerPoolStats } from './worker-pool';

/** The schema service's /metrics (Prometheus text): its worker pool. */
export function renderSchemaMetrics(stats: WorkerPoolStats, waiting: number): string {
  const out: string[] = [];
  const help = (name: string, type: string, text: string): void =>
    void out.push(`# HELP ${name} ${text}`, `# TYPE ${name} ${type}`);
  help(
    'toolplane_schema_workers',
    'gauge',
    'Worker threads running the schema engine, by state (busy ones are also ready).',
  );
  out.push(
    `toolplane_schema_workers{state="ready"} ${stats.ready}`,
    `toolplane_schema_workers{state="busy"} ${stats.busy}`,
  );
  help('toolplane_schema_queued_requests', 'gauge', 'Requests waiting for a free worker.');
  // Requests wait for their org's turn (FairQueue), then, rarely, for a worker being replaced.
  out.push(`toolplane_schema_queued_requests ${waiting + stats.queued}`);
  help(
    'toolplane_schema_worker_replacements_total',
    'counter',
    'Workers ended and replaced: past the time limit (terminated), crashed, out of memory.',
  );
  for (const [cause, n] of Object.entries(stats.replaced))
    out.push(`toolplane_schema_worker_replacements_total{cause="${cause}"} ${n}`);
  return `${out.join('\n')}\n`;
}
