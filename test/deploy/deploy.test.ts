/**
 * Offline validation of the Kubernetes manifests in deploy/: every object against the Kubernetes
 * API schemas (kubernetes-models, unknown fields rejected), the kustomizations against the files
 * present, and Toolplane's own rules (probes, resources, hardening, secrets, runner isolation).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  BASE,
  DEPLOY,
  KNOWN_HEALTH_PORTS,
  ROOT,
  appNames,
  filesUnder,
  desiredReplicas,
  isExample,
  isHelmValues,
  isKustomization,
  loadBase,
  hasKubectl,
  kustomizeBuild,
  parseWithAppConfigs,
  parseYamlFile,
  rel,
  resolvePort,
  selects,
  validateK8s,
  yamlFilesUnder,
  type Obj,
} from './support';

const APPS = appNames();
const yamlFiles = yamlFilesUnder(DEPLOY);
const kustomizations = yamlFiles.filter(isKustomization).map((file) => ({ file, k: parseYamlFile(file)[0].object }));
const localRefs = (k: Obj): string[] => [
  ...(k.resources ?? []),
  ...(k.patches ?? []).map((p: Obj) => p.path).filter(Boolean),
  ...(k.patchesStrategicMerge ?? []),
];
const patchFiles = new Set(
  kustomizations.flatMap(({ file, k }) =>
    (k.patches ?? []).filter((p: Obj) => p.path).map((p: Obj) => resolve(dirname(file), p.path)),
  ),
);

const {
  kustomization: baseKustomization,
  docs: baseDocs,
  objects: baseObjects,
  find,
  configMap,
  effectiveEnv,
} = loadBase();

/**
 * runner-local is the one exception to RuntimeDefault seccomp / Default procMount: bubblewrap needs
 * user namespaces and mounts (refused by RuntimeDefault) and a fresh /proc (refused while the
 * runtime masks paths of the container's /proc). It gets a Localhost profile shipped in
 * deploy/seccomp/ and procMount Unmasked, only together with hostUsers: false ("runner-local
 * isolation" below checks each).
 */
const RUNNER_SECCOMP = { type: 'Localhost', localhostProfile: 'profiles/toolplane-runner-local.json' };

/** Problems with a pod spec's hardening (empty when it meets the rules). */
function hardeningProblems(pod: Obj, runner = false): string[] {
  const p: string[] = [];
  const psc = pod.securityContext ?? {};
  if (pod.automountServiceAccountToken !== false) p.push('pod: automountServiceAccountToken must be false');
  if (psc.runAsNonRoot !== true) p.push('pod: securityContext.runAsNonRoot must be true');
  if (psc.runAsUser === 0) p.push('pod: runAsUser 0');
  const volumes = new Map<string, Obj>((pod.volumes ?? []).map((v: Obj) => [v.name, v]));
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}`;
    if (sc.allowPrivilegeEscalation !== false) p.push(`${where}: allowPrivilegeEscalation must be false`);
    if (sc.readOnlyRootFilesystem !== true) p.push(`${where}: readOnlyRootFilesystem must be true`);
    if (sc.privileged === true) p.push(`${where}: privileged`);
    if (sc.runAsNonRoot === false || sc.runAsUser === 0) p.push(`${where}: runs as root`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) p.push(`${where}: capabilities.drop must include ALL`);
    if ((sc.capabilities?.add ?? []).length) p.push(`${where}: adds capabilities`);
    const seccomp = sc.seccompProfile ?? psc.seccompProfile;
    const runnerException =
      runner &&
      c.name === 'runner-local' &&
      seccomp?.type === 'Localhost' &&
      seccomp.localhostProfile === RUNNER_SECCOMP.localhostProfile;
    if (seccomp?.type !== 'RuntimeDefault' && !runnerException)
      p.push(`${where}: seccompProfile must be RuntimeDefault`);
    if ((sc.procMount ?? 'Default') !== 'Default' && !(runner && c.name === 'runner-local' && pod.hostUsers === false))
      p.push(`${where}: procMount must be Default`);
    const mounts: Obj[] = c.volumeMounts ?? [];
    for (const m of mounts) if (!volumes.has(m.name)) p.push(`${where}: mount ${m.name} has no volume`);
    const tmp = mounts.find((m) => m.mountPath === '/tmp');
    if (!tmp || !volumes.get(tmp.name)?.emptyDir)
      p.push(`${where}: /tmp must be a writable emptyDir (read-only root filesystem)`);
  }
  return p;
}

const CPU = /^(\d+(?:\.\d+)?)(m?)$/;
const MEM = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const MEM_UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};
function quantity(resource: 'cpu' | 'memory', q: unknown): number {
  const m = (resource === 'cpu' ? CPU : MEM).exec(String(q));
  if (!m) return NaN;
  return resource === 'cpu' ? Number(m[1]) / (m[2] ? 1000 : 1) : Number(m[1]) * MEM_UNITS[m[2] ?? ''];
}

function deployment(app: string): Obj {
  const d = find('Deployment', app);
  if (!d) throw new Error(`no Deployment named ${app} in deploy/base (listed in kustomization.yaml)`);
  return d;
}
const podOf = (d: Obj): Obj => d.spec?.template?.spec ?? {};
const containerOf = (d: Obj, app: string): Obj =>
  podOf(d).containers?.find((c: Obj) => c.name === app) ?? podOf(d).containers?.[0] ?? {};
const healthPortOf = (c: Obj): number | undefined => resolvePort(c, 'health');

let configResults: Record<string, string> | undefined;
/** Each Deployment's (and the Job's) environment parsed by its app's own config loader. */
function appConfigResult(where: string): string {
  configResults ??= parseWithAppConfigs([
    ...APPS.filter((a) => find('Deployment', a)).map((a) => ({
      where: a,
      app: a,
      env: effectiveEnv(containerOf(deployment(a), a)),
    })),
    ...baseObjects
      .filter((o) => o.kind === 'Job')
      .map((j) => ({ where: 'job', app: 'registry', env: effectiveEnv(j.spec.template.spec.containers[0]) })),
  ]);
  return configResults[where];
}

describe('deploy/: YAML and kustomize', () => {
  it('every YAML file under deploy/ parses into mappings', () => {
    expect(yamlFiles.length).toBeGreaterThan(0);
    for (const f of yamlFiles) expect(() => parseYamlFile(f)).not.toThrow();
  });

  it('every Kubernetes object is valid against the API schema, with no unknown fields', () => {
    const items = yamlFiles
      .filter((f) => !isKustomization(f) && !isHelmValues(f) && !patchFiles.has(resolve(f)))
      .flatMap((f) =>
        parseYamlFile(f).map((d) => ({
          where: `${rel(f)} #${d.index} ${d.object.kind}/${d.object.metadata?.name}`,
          object: d.object,
        })),
      );
    expect(items.length).toBeGreaterThan(APPS.length * 3);
    const invalid = validateK8s(items).filter((r) => r.errors.length);
    expect(invalid).toEqual([]);
  });

  it.each(kustomizations.map(({ file }) => rel(file)))('%s lists exactly the files of its directory', (file) => {
    const { k } = kustomizations.find((x) => rel(x.file) === file)!;
    const dir = dirname(join(ROOT, file));
    expect(k.apiVersion).toBe('kustomize.config.k8s.io/v1beta1');
    expect(k.kind).toBe('Kustomization');
    const refs = localRefs(k);
    expect(new Set(refs).size).toBe(refs.length); // no duplicates
    const missing = refs.filter((r) => !existsSync(join(dir, r)));
    expect(missing).toEqual([]);
    for (const r of refs.filter((r) => statSync(join(dir, r)).isDirectory()))
      expect(existsSync(join(dir, r, 'kustomization.yaml'))).toBe(true);
    const listedFiles = refs
      .map((r) => resolve(dir, r))
      .filter((p) => statSync(p).isFile() && dirname(p) === dir)
      .sort();
    const present = filesUnder(dir)
      .filter((f) => dirname(f) === dir && /\.ya?ml$/.test(f) && !isKustomization(f) && !isExample(f))
      .sort();
    expect(listedFiles).toEqual(present); // no orphans
    expect(refs.filter((r) => isExample(r))).toEqual([]); // examples are never applied
  });

  it('the base is namespace-agnostic, sets the common labels and commits no Secret', () => {
    expect(baseKustomization.namespace).toBeUndefined();
    expect(baseObjects.filter((o) => o.metadata?.namespace).map((o) => o.metadata.name)).toEqual([]);
    expect(baseObjects.filter((o) => o.kind === 'Namespace' || o.kind === 'Secret')).toEqual([]);
    expect(baseKustomization.secretGenerator).toBeUndefined();
    const pairs = Object.assign(
      {},
      baseKustomization.commonLabels,
      ...(baseKustomization.labels ?? []).map((l: Obj) => l.pairs),
    );
    expect(pairs['app.kubernetes.io/part-of']).toBe('toolplane');
    // No literal DATABASE_URL anywhere in what the base applies.
    const literal = baseDocs.filter((d) => JSON.stringify(d.object).includes('postgres://'));
    expect(literal.map((d) => rel(d.file))).toEqual([]);
  });

  // kubectl ships with this machine kind; without it the kustomize check fails rather than skips.
  it('has kubectl to build the kustomizations offline', () => {
    expect(hasKubectl()).toBe(true);
  });
  it.each(kustomizations.map(({ file }) => rel(dirname(file))))('kustomize builds %s into valid objects', (dir) => {
    const built = kustomizeBuild(join(ROOT, dir))!;
    expect(built.output).not.toMatch(/^Error/);
    expect(built.ok).toBe(true);
    const objects = parseAllDocuments(built.output).map((d) => d.toJS() as Obj);
    expect(
      objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(expect.arrayContaining(APPS));
    const invalid = validateK8s(
      objects.map((o) => ({ where: `${dir}: ${o.kind}/${o.metadata?.name}`, object: o })),
    ).filter((r) => r.errors.length);
    expect(invalid).toEqual([]);
    for (const o of objects) expect(o.metadata.labels?.['app.kubernetes.io/part-of']).toBe('toolplane');
    const k = kustomizations.find(({ file }) => rel(dirname(file)) === dir)!.k;
    if (k.namespace)
      for (const o of objects.filter((o) => o.kind !== 'Namespace'))
        expect([o.kind, o.metadata.namespace]).toEqual([o.kind, k.namespace]);
  });
});

describe.each(APPS)('app %s', (app) => {
  it('has a Deployment that runs its entry point', () => {
    const c = containerOf(deployment(app), app);
    expect(c.image).toBeTruthy();
    const cmd = [...(c.command ?? []), ...(c.args ?? [])];
    expect(cmd).toContain(`dist/apps/${app}/src/main.js`);
    expect(cmd).toContain('node');
    if (existsSync(join(ROOT, 'apps', app, 'src')))
      expect(existsSync(join(ROOT, 'apps', app, 'src', 'main.ts'))).toBe(true);
  });

  it('probes /healthz (liveness) and /readyz (readiness) on its health port', () => {
    const c = containerOf(deployment(app), app);
    const port = healthPortOf(c);
    expect(port).toBeDefined();
    if (KNOWN_HEALTH_PORTS[app]) expect(port).toBe(KNOWN_HEALTH_PORTS[app]);
    expect(effectiveEnv(c).HEALTH_PORT).toBe(String(port));
    expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(resolvePort(c, c.livenessProbe?.httpGet?.port)).toBe(port);
    expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(resolvePort(c, c.readinessProbe?.httpGet?.port)).toBe(port);
    if (c.startupProbe) expect(resolvePort(c, c.startupProbe.httpGet?.port)).toBe(port);
    const others = APPS.filter((a) => a !== app && find('Deployment', a)).map((a) =>
      healthPortOf(containerOf(deployment(a), a)),
    );
    expect(others).not.toContain(port); // unique, so compose can publish them all
  });

  it('sets resource requests and limits (limits >= requests)', () => {
    const { requests = {}, limits = {} } = containerOf(deployment(app), app).resources ?? {};
    for (const r of ['cpu', 'memory'] as const) {
      expect(quantity(r, requests[r])).toBeGreaterThan(0);
      expect(quantity(r, limits[r])).toBeGreaterThanOrEqual(quantity(r, requests[r]));
    }
  });

  it('is hardened: non-root, read-only root fs, no escalation, caps dropped, RuntimeDefault seccomp, no token', () => {
    const pod = podOf(deployment(app));
    expect(hardeningProblems(pod, app === 'runner-local')).toEqual([]);
    if (app !== 'runner-local') expect(pod.hostUsers).toBeUndefined();
    const sa = pod.serviceAccountName;
    if (sa && sa !== 'default') expect(find('ServiceAccount', sa)?.automountServiceAccountToken).toBe(false);
  });

  it('gets NATS_URL from env/envFrom and its environment passes the app config schema', () => {
    const c = containerOf(deployment(app), app);
    for (const from of c.envFrom ?? [])
      if (from.configMapRef) expect(find('ConfigMap', from.configMapRef.name)).toBeDefined();
    // runner-e2b / runner-modal may have their own E2B key / Modal token pair (optional: orgs bring theirs as sandbox secrets).
    const own: Record<string, string> = {
      'runner-e2b': 'toolplane-e2b',
      'runner-modal': 'toolplane-modal',
      'web-tools': 'toolplane-exa',
    };
    const secrets = ['toolplane-db', 'toolplane-nats', ...(own[app] ? [own[app]] : [])];
    for (const e of c.env ?? [])
      if (e.valueFrom?.secretKeyRef) expect(secrets).toContain(e.valueFrom.secretKeyRef.name);
    if (app === 'runner-e2b')
      expect(c.env.find((e: Obj) => e.name === 'E2B_API_KEY')?.valueFrom?.secretKeyRef).toEqual({
        name: 'toolplane-e2b',
        key: 'E2B_API_KEY',
        optional: true,
      });
    if (app === 'runner-modal')
      for (const key of ['MODAL_TOKEN_ID', 'MODAL_TOKEN_SECRET'])
        expect(c.env.find((e: Obj) => e.name === key)?.valueFrom?.secretKeyRef).toEqual({
          name: 'toolplane-modal',
          key,
          optional: true,
        });
    const env = effectiveEnv(c);
    expect(env.NATS_URL).toMatch(/^nats:\/\//);
    expect(env.OTEL_SERVICE_NAME).toBe(app);
    const parsed = appConfigResult(app);
    expect(parsed).toBe('ok'); // npm test builds dist/ first
  });

  it('connects to NATS as its own user and mounts its own service identity (and no other app’s)', () => {
    const d = deployment(app);
    const c = containerOf(d, app);
    const env = effectiveEnv(c);
    expect(env.NATS_USER).toBe(app);
    expect(c.env.find((e: Obj) => e.name === 'NATS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: 'toolplane-nats',
      key: app,
    });
    const mount = (c.volumeMounts ?? []).find(
      (m: Obj) => m.mountPath === (env.SERVICE_KEYS_DIR ?? '/etc/toolplane/keys'),
    );
    expect(mount?.readOnly).toBe(true);
    const volume = podOf(d).volumes.find((v: Obj) => v.name === mount.name);
    const secrets = volume.projected.sources
      .filter((s: Obj) => s.secret)
      .map((s: Obj) => [s.secret.name, s.secret.items.map((i: Obj) => i.path)]);
    expect(secrets).toEqual([[`toolplane-identity-${app}`, [`${app}.key`]]]);
    expect(volume.projected.sources.filter((s: Obj) => s.configMap).map((s: Obj) => s.configMap.name)).toEqual([
      'toolplane-service-keys',
    ]);
    // Group-readable for the pod's fsGroup, never world-readable.
    expect(volume.projected.defaultMode & 0o007).toBe(0);
  });

  it('has a Service on its health port and a PodDisruptionBudget selecting its pods', () => {
    const d = deployment(app);
    const labels = d.spec.template.metadata?.labels;
    expect(selects(d.spec.selector?.matchLabels, labels)).toBe(true);
    const port = healthPortOf(containerOf(d, app));
    const svc = baseObjects.find((o) => o.kind === 'Service' && selects(o.spec?.selector, labels));
    expect(svc).toBeDefined();
    expect(svc!.spec.ports.map((p: Obj) => resolvePort(containerOf(d, app), p.targetPort ?? p.port))).toContain(port);
    const pdb = baseObjects.find(
      (o) => o.kind === 'PodDisruptionBudget' && selects(o.spec?.selector?.matchLabels, labels),
    );
    expect(pdb).toBeDefined();
    const { minAvailable, maxUnavailable } = pdb!.spec;
    expect(minAvailable ?? maxUnavailable).toBeDefined();
    if (typeof minAvailable === 'number') expect(minAvailable).toBeLessThan(desiredReplicas(baseObjects, d));
    if (typeof maxUnavailable === 'number') expect(maxUnavailable).toBeGreaterThan(0);
  });
});

describe('database and migrations', () => {
  it('registry reads DATABASE_URL from the toolplane-db Secret and does not migrate on start', () => {
    const c = containerOf(deployment('registry'), 'registry');
    expect(c.env.find((e: Obj) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'toolplane-db',
      key: 'DATABASE_URL',
    });
    expect(effectiveEnv(c).DB_MIGRATE_ON_START).toBe('false');
  });

  it('the migration Job runs migrate.js once, with the Secret, hardened', () => {
    const job = baseObjects.find((o) => o.kind === 'Job');
    expect(job).toBeDefined();
    const pod = job!.spec.template.spec;
    const c = pod.containers[0];
    expect([...(c.command ?? []), ...(c.args ?? [])]).toContain('dist/apps/registry/src/database/migrate.js');
    expect(pod.restartPolicy).toBe('Never');
    expect(job!.spec.backoffLimit).toBeGreaterThanOrEqual(0);
    expect(c.env.find((e: Obj) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'toolplane-db',
      key: 'DATABASE_URL',
    });
    expect(c.resources?.limits?.memory).toBeDefined();
    expect(hardeningProblems(pod)).toEqual([]);
    const parsed = appConfigResult('job');
    if (parsed !== 'missing') expect(parsed).toBe('ok');
  });

  it('secret.example.yaml shows the Secret shape and is not applied', () => {
    const example = parseYamlFile(join(BASE, 'secret.example.yaml'))[0].object;
    expect(example).toMatchObject({ kind: 'Secret', metadata: { name: 'toolplane-db' } });
    expect(Object.keys(example.stringData ?? example.data)).toEqual(['DATABASE_URL']);
    expect(baseKustomization.resources).not.toContain('secret.example.yaml');
  });
});

describe('runner-local isolation', () => {
  const d = deployment('runner-local');
  const pod = podOf(d);
  const labels = d.spec.template.metadata?.labels;

  it('runs under its own ServiceAccount, which mounts no token', () => {
    const sa = pod.serviceAccountName;
    expect(sa).toBeTruthy();
    expect(sa).not.toBe('default');
    const sharers = APPS.filter(
      (a) => a !== 'runner-local' && find('Deployment', a) && podOf(deployment(a)).serviceAccountName === sa,
    );
    expect(sharers).toEqual([]);
    expect(find('ServiceAccount', sa)?.automountServiceAccountToken).toBe(false);
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it('a NetworkPolicy allows egress only to NATS (4222) and DNS (53)', () => {
    const np = baseObjects.find((o) => o.kind === 'NetworkPolicy' && selects(o.spec?.podSelector?.matchLabels, labels));
    expect(np).toBeDefined();
    expect(np!.spec.policyTypes).toEqual(expect.arrayContaining(['Ingress', 'Egress']));
    const egress: Obj[] = np!.spec.egress ?? [];
    // A rule without ports would allow every port.
    expect(egress.filter((r) => !(r.ports ?? []).length)).toEqual([]);
    const ports = egress.flatMap((r) => r.ports.map((p: Obj) => `${p.protocol ?? 'TCP'}/${p.port}`));
    expect([...new Set(ports)].sort()).toEqual(['TCP/4222', 'TCP/53', 'UDP/53']);
    for (const r of egress) if (r.ports.some((p: Obj) => p.port === 53)) expect(r.to?.length).toBeGreaterThan(0);
    const health = String(healthPortOf(containerOf(d, 'runner-local')));
    const ingressPorts = (np!.spec.ingress ?? []).flatMap((r: Obj) =>
      (r.ports ?? [{ port: 'any' }]).map((p: Obj) => String(p.port)),
    );
    expect(ingressPorts.filter((p: string) => p !== health && p !== 'health')).toEqual([]);
  });

  it('relaxes seccomp and procMount for bubblewrap only inside its own user namespace', () => {
    const c = containerOf(d, 'runner-local');
    expect(pod.hostUsers).toBe(false);
    expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(c.securityContext.seccompProfile).toEqual(RUNNER_SECCOMP);
    expect(c.securityContext.procMount).toBe('Unmasked');
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.securityContext.capabilities.add).toBeUndefined();
    expect(pod.initContainers ?? []).toEqual([]);
  });

  it('ships the Localhost seccomp profile: namespace and mount calls allowed, the dangerous rest denied', () => {
    const profile = JSON.parse(readFileSync(join(DEPLOY, 'seccomp', 'toolplane-runner-local.json'), 'utf8'));
    expect(profile.defaultAction).toBe('SCMP_ACT_ALLOW');
    expect(profile.architectures).toEqual(['SCMP_ARCH_X86_64', 'SCMP_ARCH_AARCH64']);
    expect(profile.syscalls.filter((r: Obj) => r.action !== 'SCMP_ACT_ERRNO')).toEqual([]);
    const denied = new Set<string>(profile.syscalls.flatMap((r: Obj) => r.names));
    for (const s of [
      'ptrace',
      'bpf',
      'keyctl',
      'add_key',
      'kexec_load',
      'init_module',
      'finit_module',
      'perf_event_open',
      'userfaultfd',
      'setns',
      'open_by_handle_at',
      'io_uring_setup',
      'process_vm_readv',
      'reboot',
      'swapon',
      'fsopen',
      'open_tree',
      'move_mount',
    ]) {
      expect(denied.has(s)).toBe(true);
    }
    for (const s of ['unshare', 'clone', 'clone3', 'mount', 'umount2', 'pivot_root', 'chroot', 'sethostname'])
      expect(denied.has(s)).toBe(false);
    expect(readFileSync(join(DEPLOY, 'seccomp', 'README.md'), 'utf8')).toContain(
      '/var/lib/kubelet/seccomp/profiles/toolplane-runner-local.json',
    );
  });

  it('asks for a delegated cgroup (per-call limits) and keeps network-enabled tools off', () => {
    expect(d.spec.template.metadata?.annotations?.['io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw']).toBe('true');
    const env = effectiveEnv(containerOf(d, 'runner-local'));
    expect(env.RUNNER_CGROUPS).toBe('auto');
    expect(env.RUNNER_ALLOW_NETWORK).toBe('false');
    // containerd: the overlay runs the runner on a writable-cgroup runtime handler and requires delegation.
    const overlay = kustomizeBuild(join(DEPLOY, 'overlays', 'runner-cgroups-containerd'))!;
    expect(overlay.ok).toBe(true);
    const built = parseAllDocuments(overlay.output).map((doc) => doc.toJS() as Obj);
    const rc = built.find((o: Obj) => o.kind === 'RuntimeClass');
    const runner = built.find((o: Obj) => o.kind === 'Deployment' && o.metadata.name === 'runner-local');
    expect(rc?.handler).toBeTruthy();
    expect(runner?.spec.template.spec.runtimeClassName).toBe(rc?.metadata.name);
    expect(runner?.spec.template.spec.containers[0].env).toEqual(
      expect.arrayContaining([{ name: 'RUNNER_CGROUPS', value: 'required' }]),
    );
  });

  it('tool code writes only to /tmp, the RUNNER_WORK_ROOT emptyDir', () => {
    const c = containerOf(d, 'runner-local');
    const env = effectiveEnv(c);
    expect(env.RUNNER_WORK_ROOT).toMatch(/^\/tmp\//);
    expect(env.RUNNER_PYTHON).toBe('/usr/bin/python3');
    const tmp = pod.volumes.find((v: Obj) => v.name === c.volumeMounts.find((m: Obj) => m.mountPath === '/tmp')?.name);
    expect(tmp?.emptyDir?.sizeLimit).toBeTruthy();
  });
});

describe('mcp-gateway, the HTTP edge', () => {
  const d = deployment('mcp-gateway');
  const c = containerOf(d, 'mcp-gateway');
  const labels = d.spec.template.metadata?.labels;
  const env = effectiveEnv(c);
  const svc = find('Service', 'mcp-gateway');

  it('listens on GATEWAY_PORT 8090, behind Service mcp-gateway port 80, with 2 replicas', () => {
    expect(resolvePort(c, 'http')).toBe(8090);
    expect(env.GATEWAY_PORT).toBe('8090');
    expect(desiredReplicas(baseObjects, d)).toBe(2);
    expect(selects(svc?.spec.selector, labels)).toBe(true);
    const http = svc!.spec.ports.find((p: Obj) => p.port === 80);
    expect(http?.name).toBe('http');
    expect(resolvePort(c, http?.targetPort)).toBe(8090);
  });

  it('runs under a ServiceAccount of its own, which mounts no token', () => {
    const sa = podOf(d).serviceAccountName;
    expect(sa).toBe('toolplane-mcp-gateway');
    expect(
      APPS.filter(
        (a) => a !== 'mcp-gateway' && find('Deployment', a) && podOf(deployment(a)).serviceAccountName === sa,
      ),
    ).toEqual([]);
    expect(find('ServiceAccount', sa)?.automountServiceAccountToken).toBe(false);
  });

  it('a NetworkPolicy takes MCP from anywhere, health only from the cluster, and allows egress only to NATS and DNS', () => {
    const np = baseObjects.find((o) => o.kind === 'NetworkPolicy' && selects(o.spec?.podSelector?.matchLabels, labels));
    expect(np).toBeDefined();
    expect(np!.spec.policyTypes).toEqual(expect.arrayContaining(['Ingress', 'Egress']));
    const egress: Obj[] = np!.spec.egress ?? [];
    expect(egress.filter((r) => !(r.ports ?? []).length)).toEqual([]);
    expect(
      [...new Set(egress.flatMap((r) => r.ports.map((p: Obj) => `${p.protocol ?? 'TCP'}/${p.port}`)))].sort(),
    ).toEqual(['TCP/4222', 'TCP/53', 'UDP/53']);
    for (const r of egress) if (r.ports.some((p: Obj) => p.port === 53)) expect(r.to?.length).toBeGreaterThan(0);
    const ingress: Obj[] = np!.spec.ingress ?? [];
    expect(ingress.filter((r) => !(r.ports ?? []).length)).toEqual([]);
    const rule = (port: number) => ingress.filter((r) => r.ports.some((p: Obj) => p.port === port));
    expect(ingress.flatMap((r) => r.ports.map((p: Obj) => p.port)).sort()).toEqual([8090, 8091]);
    expect(rule(8091).every((r) => r.from?.length && r.from.every((f: Obj) => f.namespaceSelector && !f.ipBlock))).toBe(
      true,
    );
  });

  it('ships an Ingress example, not applied: TLS from a Secret, long unbuffered responses (SSE), both path prefixes to the Service', () => {
    expect(baseKustomization.resources).not.toContain('mcp-gateway-ingress.example.yaml');
    const ing = parseYamlFile(join(BASE, 'mcp-gateway-ingress.example.yaml'))
      .map((x) => x.object)
      .find((o) => o.kind === 'Ingress')!;
    const hosts = ing.spec.rules.map((r: Obj) => r.host);
    expect(ing.spec.tls).toEqual([{ hosts, secretName: expect.any(String) }]);
    const a = ing.metadata.annotations;
    expect(a['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
    // Longer than a call, or an approval asked by elicitation, may keep a response open.
    const longest = Math.max(Number(env.GATEWAY_CALL_TIMEOUT_MS), Number(env.GATEWAY_ELICITATION_TIMEOUT_MS)) / 1000;
    expect(longest).toBeGreaterThan(0);
    for (const k of ['proxy-read-timeout', 'proxy-send-timeout'])
      expect(Number(a[`nginx.ingress.kubernetes.io/${k}`])).toBeGreaterThan(longest);
    // Above the gateway's own body limit, so that the gateway answers 413 itself.
    expect(
      quantity('memory', String(a['nginx.ingress.kubernetes.io/proxy-body-size']).replace(/m$/, 'Mi')),
    ).toBeGreaterThan(Number(env.GATEWAY_MAX_BODY_BYTES));
    const paths: Obj[] = ing.spec.rules.flatMap((r: Obj) => r.http.paths);
    expect(paths.map((p) => `${p.pathType} ${p.path}`).sort()).toEqual([
      'Prefix /.well-known/oauth-protected-resource',
      'Prefix /mcp',
    ]);
    for (const p of paths) expect(p.backend.service).toEqual({ name: svc!.metadata.name, port: { name: 'http' } });
  });

  it('its README documents every variable of its config, and the configmap sets none it does not know', () => {
    const source = readFileSync(join(ROOT, 'apps', 'mcp-gateway', 'src', 'mcp-gateway.config.ts'), 'utf8');
    const shape = /export const gatewayEnvShape = \{([\s\S]*?)\n\};/.exec(source)?.[1] ?? '';
    const variables = [...shape.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(variables).toEqual(expect.arrayContaining(['GATEWAY_PORT', 'HEALTH_PORT', 'GATEWAY_PUBLIC_URL']));
    const readme = readFileSync(join(ROOT, 'apps', 'mcp-gateway', 'README.md'), 'utf8');
    const documented = new Set([...readme.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!));
    expect(variables.filter((v) => !documented.has(v))).toEqual([]);
    expect(
      Object.keys(configMap('toolplane-config')).filter((k) => k.startsWith('GATEWAY_') && !variables.includes(k)),
    ).toEqual([]);
  });
});

describe('NATS users and permissions (deploy/nats)', () => {
  it('ships the authorization generated from the contracts (run `npm run nats:config` after a contract change)', () => {
    const { natsServerConfig } =
      require('../../tools/deploy/nats-config') as typeof import('../../tools/deploy/nats-config');
    expect(readFileSync(join(DEPLOY, 'nats', 'toolplane-auth.conf'), 'utf8')).toBe(natsServerConfig());
    const server = readFileSync(join(DEPLOY, 'nats', 'nats-server.conf'), 'utf8');
    expect(server).toMatch(/^include \.\/toolplane-auth\.conf$/m);
    expect(server).toMatch(/^jetstream \{/m);
  });

  it('holds no password: every one is an environment reference of the nats-server process', () => {
    const text = readFileSync(join(DEPLOY, 'nats', 'toolplane-auth.conf'), 'utf8');
    const passwords = [...text.matchAll(/password: (\S+),/g)].map((m) => m[1]!);
    expect(passwords.length).toBe(APPS.length + 1);
    for (const p of passwords) expect(p).toMatch(/^\$NATS_PASSWORD_[A-Z0-9_]+$/);
  });
});
