/**
 * Offline validation of docker-compose.yml, the Dockerfile and .dockerignore: every app is wired
 * (command, NATS, OTLP to Jaeger with its own service name, health port and healthcheck,
 * dependencies with conditions) and its environment passes the app's own config schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KNOWN_HEALTH_PORTS, ROOT, appNames, parseWithAppConfigs, type Obj } from './support';

const APPS = appNames();
const compose: Obj = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true, maxAliasCount: -1 });
const services: Record<string, Obj> = compose.services ?? {};
const envOf = (s: Obj | undefined): Record<string, string> => {
  const e = s?.environment ?? {};
  // compose accepts a list of KEY=VALUE too
  const entries: [string, unknown][] = Array.isArray(e)
    ? e.map((kv: string) => [kv.split('=')[0], kv.slice(kv.indexOf('=') + 1)])
    : Object.entries(e);
  return Object.fromEntries(entries.map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
};
const commandOf = (s: Obj | undefined): string[] =>
  Array.isArray(s?.command) ? s.command : String(s?.command ?? '').split(/\s+/);
const dependsOf = (s: Obj | undefined): Record<string, Obj> =>
  Array.isArray(s?.depends_on) ? Object.fromEntries(s.depends_on.map((d: string) => [d, {}])) : (s?.depends_on ?? {});

let configResults: Record<string, string> | undefined;
const appConfigResult = (where: string): string =>
  (configResults ??= parseWithAppConfigs([
    ...APPS.filter((a) => services[a]).map((a) => ({ where: a, app: a, env: envOf(services[a]) })),
    { where: 'migrate', app: 'registry', env: envOf(services.migrate) },
  ]))[where];

describe('docker-compose.yml', () => {
  it('parses and has the infrastructure: NATS with JetStream, Postgres 16, Jaeger with OTLP', () => {
    expect(services.nats?.image).toMatch(/^nats:2\.10(\b|-)/);
    expect(commandOf(services.nats)).toContain('-js');
    expect(services.postgres?.image).toMatch(/^postgres:16(\b|-|\.)/);
    expect(envOf(services.postgres).POSTGRES_DB).toBe('toolplane');
    expect(services.jaeger?.image).toMatch(/^jaegertracing\/all-in-one:/);
    expect(envOf(services.jaeger).COLLECTOR_OTLP_ENABLED).toBe('true');
    const jaegerPorts = (services.jaeger.ports ?? []).map(String).join(' ');
    expect(jaegerPorts).toMatch(/\b4318:4318\b/);
    expect(jaegerPorts).toMatch(/\b16686:16686\b/);
    for (const name of ['nats', 'postgres']) expect(services[name].healthcheck?.test).toBeDefined();
  });

  it('runs migrations as a one-shot service after Postgres is healthy', () => {
    const m = services.migrate;
    expect(commandOf(m)).toContain('dist/apps/registry/src/database/migrate.js');
    expect(m.restart ?? 'no').toBe('no');
    expect(dependsOf(m).postgres?.condition).toBe('service_healthy');
    expect(envOf(m).DATABASE_URL).toMatch(/^postgres(ql)?:\/\/[^@]+@postgres:5432\/toolplane$/);
    const parsed = appConfigResult('migrate');
    if (parsed !== 'missing') expect(parsed).toBe('ok');
  });

  it('every depends_on names a service and uses a condition', () => {
    const bad = Object.entries(services).flatMap(([name, s]) =>
      Object.entries(dependsOf(s))
        .filter(
          ([dep, d]) =>
            !services[dep] ||
            !['service_started', 'service_healthy', 'service_completed_successfully'].includes(d.condition),
        )
        .map(([dep]) => `${name} -> ${dep}`),
    );
    expect(bad).toEqual([]);
    // a service_healthy dependency needs a healthcheck on the target
    for (const s of Object.values(services))
      for (const [dep, d] of Object.entries(dependsOf(s)))
        if (d.condition === 'service_healthy')
          expect([dep, services[dep].healthcheck?.test !== undefined]).toEqual([dep, true]);
  });

  describe.each(APPS)('app %s', (app) => {
    it('is a service running its entry point from the project image', () => {
      const s = services[app];
      expect(s).toBeDefined();
      expect(commandOf(s)).toEqual(['node', `dist/apps/${app}/src/main.js`]);
      expect(s.build ?? s.image).toBeTruthy();
      expect(s.image).toBe(services.migrate.image);
    });

    it('is wired to NATS and to Jaeger over OTLP with its own OTEL_SERVICE_NAME', () => {
      const env = envOf(services[app]);
      expect(env.OTEL_SERVICE_NAME).toBe(app);
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://jaeger:4318');
      expect(env.OTEL_EXPORTER_OTLP_PROTOCOL).toBe('http/protobuf');
      expect(env.NATS_URL).toBe('nats://nats:4222');
      const deps = dependsOf(services[app]);
      expect(deps.nats?.condition).toBe('service_healthy');
      expect(deps.jaeger).toBeDefined();
      const parsed = appConfigResult(app);
      if (parsed !== 'missing') expect(parsed).toBe('ok');
    });

    it('has a healthcheck on its /readyz and health port', () => {
      const s = services[app];
      const port = envOf(s).HEALTH_PORT;
      if (KNOWN_HEALTH_PORTS[app]) expect(port).toBe(String(KNOWN_HEALTH_PORTS[app]));
      const test = [s.healthcheck?.test ?? []].flat().join(' ');
      expect(test).toContain(`:${port}/readyz`);
      const others = APPS.filter((a) => a !== app && services[a]).map((a) => envOf(services[a]).HEALTH_PORT);
      expect(others).not.toContain(port);
    });
  });

  it('registry uses Postgres after the migration and does not migrate itself', () => {
    const env = envOf(services.registry);
    expect(env.DB_MIGRATE_ON_START).toBe('false');
    expect(env.DATABASE_URL).toBe(envOf(services.migrate).DATABASE_URL);
    expect(dependsOf(services.registry).migrate?.condition).toBe('service_completed_successfully');
  });

  it('runner-local has python3 configured and a writable /tmp on a read-only root', () => {
    const s = services['runner-local'];
    expect(envOf(s).RUNNER_PYTHON).toBe('/usr/bin/python3');
    expect(envOf(s).RUNNER_WORK_ROOT).toMatch(/^\/tmp\//);
    expect(s.read_only).toBe(true);
    expect((s.tmpfs ?? []).some((t: string) => t.startsWith('/tmp'))).toBe(true);
  });
});

describe('Dockerfile', () => {
  const lines = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const instr = (name: string) => lines.filter((l) => l.toUpperCase().startsWith(name + ' '));

  it('is multi-stage on node:24-bookworm-slim: npm install (locked), build, prune dev dependencies', () => {
    const from = instr('FROM');
    expect(from.length).toBeGreaterThanOrEqual(2);
    const arg = instr('ARG').join(' ');
    for (const f of from)
      expect(f.replace('${NODE_IMAGE}', /NODE_IMAGE=(\S+)/.exec(arg)?.[1] ?? '')).toMatch(
        /^FROM node:24-bookworm-slim\b/,
      );
    const run = instr('RUN').join('\n');
    expect(run).toMatch(/npm install --ignore-scripts\b/);
    expect(run).toMatch(/npm run build\b/);
    expect(run).toMatch(/npm prune --omit=dev\b/);
  });

  it('runtime: python3, bubblewrap and slirp4netns installed, non-root numeric USER, WORKDIR /app, no CMD (each service picks its app)', () => {
    const runtime = lines.slice(lines.lastIndexOf(instr('FROM').at(-1)!));
    for (const pkg of ['python3', 'bubblewrap', 'slirp4netns'])
      expect(runtime.filter((l) => l.startsWith('RUN')).join(' ')).toMatch(
        new RegExp(`apt-get install[^&]*\\b${pkg}\\b`),
      );
    const user = runtime.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toMatch(/^USER [1-9]\d*(:\d+)?$/);
    expect(runtime).toContain('WORKDIR /app');
    expect(lines.filter((l) => l.startsWith('CMD'))).toEqual([]);
    expect(runtime.some((l) => /^COPY --from=\S+ .*\/dist \.\/dist$/.test(l))).toBe(true);
  });

  it('.dockerignore keeps node_modules, dist and .git out of the context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
  });
});
