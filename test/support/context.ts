/** What the global setup made for this run. */
export function testPrefix(): string {
  const p = process.env.TOOLPLANE_TEST_PREFIX;
  if (!p) throw new Error('TOOLPLANE_TEST_PREFIX is not set: run through jest (global setup)');
  return p;
}

export function testDatabaseUrl(): string {
  const u = process.env.TOOLPLANE_TEST_DATABASE_URL;
  if (!u) throw new Error('TOOLPLANE_TEST_DATABASE_URL is not set: run through jest (global setup)');
  return u;
}

export function uniqueOrg(label = 'org'): string {
  return `${label}-${Math.random().toString(36).slice(2, 10)}`;
}

/** The health/metrics port of an app of the run's shared stack. */
export function sharedAppPort(app: string): number {
  const port = (JSON.parse(process.env.TOOLPLANE_TEST_HEALTH_PORTS ?? '{}') as Record<string, number>)[app];
  if (!port) throw new Error(`no ${app} in the shared stack (TOOLPLANE_TEST_HEALTH_PORTS)`);
  return port;
}
