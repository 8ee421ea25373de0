/**
 * What running Toolplane past one machine needs, checked offline in deploy/: every replicated
 * Deployment has a PodDisruptionBudget and prefers one replica per node; HorizontalPodAutoscalers
 * on CPU scale the stateless apps (and only them) and aim at Deployments that exist; each pod's
 * grace period covers its app's drain; at full scale the Postgres pools fit max_connections; and
 * the NATS cluster (the official Helm chart's values: 3 servers, JetStream on file storage,
 * Toolplane's users) keeps every stream and KV bucket on 3 of them.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import {
  DEPLOY,
  ROOT,
  autoscalerOf,
  desiredReplicas,
  isKustomization,
  kustomizeBuild,
  loadBase,
  rel,
  selects,
  yamlFilesUnder,
  type Obj,
} from './support';

const base = loadBase();
const deployments = base.objects.filter((o) => o.kind === 'Deployment');
const names = deployments.map((d) => d.metadata.name as string).sort();
const deployment = (name: string): Obj => deployments.find((d) => d.metadata.name === name)!;
const podOf = (d: Obj): Obj => d.spec.template.spec;
const labelsOf = (d: Obj): Record<string, string> => d.spec.template.metadata?.labels ?? {};
const mainContainer = (d: Obj): Obj =>
  podOf(d).containers.find((c: Obj) => c.name === d.metadata.name) ?? podOf(d).containers[0];
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** The apps scaled on CPU. mcp-sync and the runners keep a fixed count: deploy/README.md says why. */
const AUTOSCALED = ['credentials', 'executor', 'mcp-gateway', 'registry', 'schema', 'web-tools'];

describe('replicated Deployments survive a node drain and a node loss', () => {
  it('every app runs more than one replica', () => {
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => desiredReplicas(base.objects, deployment(n)) < 2)).toEqual([]);
  });

  it.each(names)('%s has a PodDisruptionBudget that lets one pod go at a time', (name) => {
    const d = deployment(name);
    const replicas = desiredReplicas(base.objects, d);
    const pdb = base.objects.find(
      (o) => o.kind === 'PodDisruptionBudget' && selects(o.spec?.selector?.matchLabels, labelsOf(d)),
    );
    expect(pdb).toBeDefined();
    const { minAvailable, maxUnavailable } = pdb!.spec;
    if (maxUnavailable !== undefined) expect(maxUnavailable).toBe(1);
    else {
      expect(minAvailable).toBeGreaterThanOrEqual(1);
      expect(minAvailable).toBeLessThan(replicas); // else no node could ever be drained
    }
  });

  it.each(names)('%s prefers one replica per node (podAntiAffinity by hostname on its own pods)', (name) => {
    const d = deployment(name);
    const anti = podOf(d).affinity?.podAntiAffinity ?? {};
    const terms: Obj[] = anti.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    const own = terms.filter(
      (t) =>
        t.weight > 0 &&
        t.podAffinityTerm?.topologyKey === 'kubernetes.io/hostname' &&
        selects(t.podAffinityTerm.labelSelector?.matchLabels, labelsOf(d)),
    );
    expect(own.length).toBe(1);
    // Preferred, not required: a cluster with fewer nodes than replicas still schedules them all.
    expect(anti.requiredDuringSchedulingIgnoredDuringExecution).toBeUndefined();
  });
});

describe('HorizontalPodAutoscalers', () => {
  const hpas = base.objects.filter((o) => o.kind === 'HorizontalPodAutoscaler');

  it('scale exactly the stateless apps', () => {
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(AUTOSCALED);
    expect(new Set(hpas.map((h) => h.metadata.name)).size).toBe(hpas.length);
  });

  it.each(hpas.map((h) => h.metadata.name as string))(
    '%s targets a Deployment of the base, on CPU, from 2 replicas, and owns its count',
    (name) => {
      const h = hpas.find((x) => x.metadata.name === name)!;
      const ref = h.spec.scaleTargetRef;
      expect([ref.apiVersion, ref.kind]).toEqual(['apps/v1', 'Deployment']);
      const d = base.find('Deployment', ref.name);
      expect(d).toBeDefined();
      expect(autoscalerOf(base.objects, d!)).toBe(h);
      // An apply would otherwise reset what the autoscaler chose.
      expect(d!.spec.replicas).toBeUndefined();
      expect(h.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(h.spec.maxReplicas).toBeGreaterThan(h.spec.minReplicas);
      expect(h.spec.metrics).toEqual([
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } },
        },
      ]);
      // Utilization is a share of the request: without one the autoscaler has nothing to measure.
      expect(mainContainer(d!).resources?.requests?.cpu).toBeTruthy();
    },
  );

  const builds = yamlFilesUnder(DEPLOY)
    .filter(isKustomization)
    .map((f) => rel(dirname(f)));
  it.each(builds)('in the build of %s, every autoscaler targets a Deployment of the build', (dir) => {
    const built = kustomizeBuild(join(ROOT, dir))!;
    expect(built.ok).toBe(true);
    const objects = parseAllDocuments(built.output).map((doc) => doc.toJS() as Obj);
    const targets = objects
      .filter((o) => o.kind === 'HorizontalPodAutoscaler')
      .map((h) => `${h.metadata.namespace ?? ''}/${h.spec.scaleTargetRef.kind}/${h.spec.scaleTargetRef.name}`);
    const present = new Set(
      objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => `${o.metadata.namespace ?? ''}/Deployment/${o.metadata.name}`),
    );
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((t) => !present.has(t))).toEqual([]);
  });
});

/**
 * What an app waits for after the transport's SHUTDOWN_GRACE_MS (NatsJsonServer.close), stage
 * after stage (Nest runs each module's destroy hooks after the one before).
 */
const DRAIN_AFTER_TRANSPORT: Record<string, (graceMs: number) => number[]> = {
  // AsyncRunsService: SHUTDOWN_GRACE_MS for the async runs in flight, then 5 s once their runners
  // are told to stop them; RecordWriter: flushes for max(2 s, SHUTDOWN_GRACE_MS).
  executor: (g) => [g + 5000, Math.max(2000, g)],
};
/** Beyond the drain: answering what is left SERVICE_RESTARTING, the NATS drain, the trace flush. */
const MARGIN_MS = 5000;

/** A preStop hook's pause (`sleep N` exec, or the `sleep` action), in ms. */
function preStopMs(c: Obj): number {
  const hook = c.lifecycle?.preStop;
  if (!hook) return 0;
  if (hook.sleep) return hook.sleep.seconds * 1000;
  const cmd: string[] = hook.exec?.command ?? [];
  const i = cmd.findIndex((x) => /(^|\/)sleep$/.test(x));
  if (i < 0) throw new Error(`preStop ${cmd.join(' ')}: unknown duration`);
  return Number(cmd[i + 1]) * 1000;
}

describe('grace periods cover the drains', () => {
  it.each(names)('%s: terminationGracePeriodSeconds exceeds its preStop, drain and margin', (name) => {
    const d = deployment(name);
    const c = mainContainer(d);
    const grace = Number(base.effectiveEnv(c).SHUTDOWN_GRACE_MS);
    expect(Number.isInteger(grace)).toBe(true);
    const drain = preStopMs(c) + grace + sum(DRAIN_AFTER_TRANSPORT[name]?.(grace) ?? []);
    expect(podOf(d).terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(drain + MARGIN_MS);
  });

  it('the executor stages above are the code’s', () => {
    const src = (f: string) => readFileSync(join(ROOT, 'apps', 'executor', 'src', f), 'utf8');
    const asyncRuns = src('executions/async-runs.service.ts');
    expect(asyncRuns).toContain('const graceEnds = Date.now() + this.config.SHUTDOWN_GRACE_MS;');
    expect(asyncRuns).toContain('const hardEnd = Date.now() + 5000;');
    expect(src('records/record-writer.ts')).toContain('Date.now() + Math.max(2000, this.config.SHUTDOWN_GRACE_MS)');
  });
});

describe('Postgres connections at full scale', () => {
  it('every replica’s pool (autoscaler maxima, one surge pod each) fits the max_connections deploy/README.md asks for', () => {
    const readme = readFileSync(join(DEPLOY, 'README.md'), 'utf8');
    const asked = /`max_connections` ≥ (\d+)/.exec(readme);
    expect(asked).not.toBeNull();
    const withDb = deployments.filter((d) => (mainContainer(d).env ?? []).some((e: Obj) => e.name === 'DATABASE_URL'));
    expect(withDb.map((d) => d.metadata.name).sort()).toEqual(['credentials', 'executor', 'mcp-sync', 'registry']);
    const connections = withDb.map((d) => {
      const most = autoscalerOf(base.objects, d)?.spec.maxReplicas ?? d.spec.replicas ?? 1;
      const surge = d.spec.strategy?.rollingUpdate?.maxSurge ?? 1;
      expect(typeof surge).toBe('number');
      const pool = Number(base.effectiveEnv(mainContainer(d)).DB_POOL_MAX);
      expect(pool).toBeGreaterThan(0);
      return (most + surge) * pool;
    });
    // Postgres keeps superuser_reserved_connections (3) out of max_connections.
    expect(sum(connections)).toBeLessThanOrEqual(Number(asked![1]) - 3);
  });

  it('deploy/README.md has a section "Scaling each service" that names every app', () => {
    const readme = readFileSync(join(DEPLOY, 'README.md'), 'utf8');
    const start = readme.indexOf('\n## Scaling each service\n');
    expect(start).toBeGreaterThan(0);
    const end = readme.indexOf('\n## ', start + 1);
    const section = readme.slice(start, end < 0 ? undefined : end);
    expect(names.filter((n) => !section.includes(`\`${n}\``))).toEqual([]);
  });
});

describe('the NATS cluster (deploy/nats/helm-values.yaml, the official chart)', () => {
  const valuesText = readFileSync(join(DEPLOY, 'nats', 'helm-values.yaml'), 'utf8');
  const values: Obj = parse(valuesText);
  const auth = readFileSync(join(DEPLOY, 'nats', 'toolplane-auth.conf'), 'utf8');
  const include = (): string => {
    const found = Object.entries(values.config?.merge ?? {}).filter(([k]) => k.endsWith('$include'));
    expect(found.length).toBe(1);
    return found[0]![1] as string;
  };

  it('runs 3 servers in a cluster, with JetStream on file storage (a volume each), one per node', () => {
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(values.config.jetstream).toMatchObject({
      enabled: true,
      fileStore: { enabled: true, pvc: { enabled: true } },
    });
    expect(values.podTemplate.topologySpreadConstraints['kubernetes.io/hostname']).toEqual({
      maxSkew: 1,
      whenUnsatisfiable: 'DoNotSchedule',
    });
    expect(values.podDisruptionBudget?.enabled).not.toBe(false);
  });

  it('the apps keep every stream and KV bucket on 3 servers (NATS_STREAM_REPLICAS), no more than the cluster has', () => {
    expect(base.configMap('toolplane-config').NATS_STREAM_REPLICAS).toBe('3');
    for (const n of names)
      expect([n, base.effectiveEnv(mainContainer(deployment(n))).NATS_STREAM_REPLICAS]).toEqual([n, '3']);
    expect(3).toBeLessThanOrEqual(values.config.cluster.replicas);
  });

  it('includes Toolplane’s users: the generated file mounted where the include points, every password from the Secret', () => {
    // The chart resolves includes against its config file, /etc/nats-config/nats.conf.
    const target = posix.resolve('/etc/nats-config', include());
    const mount = (values.container.patch ?? [])
      .filter((p: Obj) => p.op === 'add' && p.path === '/volumeMounts/-')
      .map((p: Obj) => p.value)
      .find((m: Obj) => posix.join(m.mountPath, 'toolplane-auth.conf') === target);
    expect(mount).toBeDefined();
    const volume = (values.podTemplate.patch ?? [])
      .filter((p: Obj) => p.op === 'add' && p.path === '/spec/volumes/-')
      .map((p: Obj) => p.value)
      .find((v: Obj) => v.name === mount.name);
    expect(volume?.configMap?.name).toBeTruthy();
    expect(valuesText).toContain(
      `create configmap ${volume.configMap.name} --from-file=deploy/nats/toolplane-auth.conf`,
    );
    const passwords = [...new Set([...auth.matchAll(/\$(NATS_PASSWORD_[A-Z0-9_]+)/g)].map((m) => m[1]!))];
    expect(passwords.length).toBe(names.length + 1);
    for (const p of passwords)
      expect([p, values.container.env?.[p]?.valueFrom?.secretKeyRef?.name]).toEqual([p, 'toolplane-nats']);
    // Each app's password is the one its own Deployment reads (Secret toolplane-nats, key <app>).
    for (const n of names) {
      const key = mainContainer(deployment(n)).env.find((e: Obj) => e.name === 'NATS_PASSWORD').valueFrom.secretKeyRef
        .key;
      const env = `NATS_PASSWORD_${key.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
      expect([env, values.container.env[env]?.valueFrom?.secretKeyRef?.key]).toEqual([env, key]);
    }
  });

  it('nats-server accepts the configuration the chart makes of these values: cluster, JetStream, the include', () => {
    const root = mkdtempSync(join(tmpdir(), 'toolplane-nats-'));
    try {
      const at = (p: string) => join(root, p);
      mkdirSync(at('etc/nats-config'), { recursive: true });
      mkdirSync(dirname(at(posix.resolve('/etc/nats-config', include()))), { recursive: true });
      copyFileSync(join(DEPLOY, 'nats', 'toolplane-auth.conf'), at(posix.resolve('/etc/nats-config', include())));
      const routes = [0, 1, 2].map((i) => `"nats://nats-${i}.nats-headless:${values.config.cluster.port ?? 6222}"`);
      writeFileSync(
        at('etc/nats-config/nats.conf'),
        [
          '{',
          '  "server_name": $SERVER_NAME,',
          '  "port": 4222,',
          `  "cluster": { "name": "nats", "no_advertise": true, "port": 6222, "routes": [${routes.join(', ')}] },`,
          `  "jetstream": { "store_dir": "${at('data')}", "max_file_store": ${values.config.jetstream.fileStore.pvc.size}, "max_memory_store": 0 },`,
          `  include ${include()};`,
          '}',
        ].join('\n'),
      );
      const env: Record<string, string> = { PATH: process.env.PATH ?? '', SERVER_NAME: 'nats-0' };
      // The container's environment: literal values as they are (GOMEMLIMIT), each Secret's as a stand-in.
      for (const [k, v] of Object.entries<unknown>(values.container.env))
        env[k] = typeof v === 'string' ? v : 'not-a-real-password';
      const r = spawnSync('nats-server', ['-t', '-c', at('etc/nats-config/nats.conf')], { encoding: 'utf8', env });
      expect(r.error).toBeUndefined();
      expect(`${r.status} ${r.stdout}${r.stderr}`).toMatch(/^0 .*is valid/s);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
