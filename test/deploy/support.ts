import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** A manifest node: untyped YAML. */
export type Obj = Record<string, any>;

export const ROOT = join(__dirname, '..', '..');
export const DEPLOY = join(ROOT, 'deploy');
export const BASE = join(DEPLOY, 'base');

/** Health ports fixed by the apps' own config defaults. */
export const KNOWN_HEALTH_PORTS: Record<string, number> = {
  registry: 8081,
  schema: 8082,
  executor: 8083,
  'runner-local': 8084,
  'runner-e2b': 8087,
  'runner-modal': 8088,
  'web-tools': 8089,
  'mcp-gateway': 8091,
};

/** Every deployable: the directories under apps/, and at least the four known apps. */
export function appNames(): string[] {
  let dirs: string[] = [];
  try {
    dirs = readdirSync(join(ROOT, 'apps')).filter((d) => statSync(join(ROOT, 'apps', d)).isDirectory());
  } catch {
    // apps/ not readable: the known apps only
  }
  return [...new Set([...Object.keys(KNOWN_HEALTH_PORTS), ...dirs])].sort();
}

export function rel(path: string): string {
  return relative(ROOT, path);
}

/** All files below dir (recursive), absolute paths. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

export const yamlFilesUnder = (dir: string): string[] => filesUnder(dir).filter((f) => /\.ya?ml$/.test(f));

export interface Doc {
  file: string;
  index: number;
  object: Obj;
}

/** Parses every document of a YAML file; throws on any YAML error or a non-mapping document. */
export function parseYamlFile(file: string, text = readFileSync(file, 'utf8')): Doc[] {
  return parseAllDocuments(text)
    .map((d, index) => {
      if (d.errors.length) throw new Error(`${rel(file)} #${index}: ${d.errors.map((e) => e.message).join('; ')}`);
      const object = d.toJS({ maxAliasCount: -1 });
      if (object === null || object === undefined) return undefined;
      if (typeof object !== 'object' || Array.isArray(object)) throw new Error(`${rel(file)} #${index}: not a mapping`);
      return { file, index, object };
    })
    .filter((d): d is Doc => d !== undefined);
}

export const isKustomization = (file: string): boolean => /(^|\/)kustomization\.ya?ml$/.test(file);
export const isExample = (file: string): boolean => /\.example\.ya?ml$/.test(file);

/** Validates objects against the Kubernetes API schemas (kubernetes-models) in a child node. */
export function validateK8s(items: { where: string; object: Obj }[]): { where: string; errors: string[] }[] {
  const r = spawnSync(process.execPath, [join(__dirname, 'k8s-validate.mjs')], {
    cwd: ROOT,
    input: JSON.stringify(items),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`k8s-validate.mjs failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** `kubectl kustomize DIR` when kubectl is installed (it builds offline); undefined otherwise. */
export function kustomizeBuild(dir: string): { ok: boolean; output: string } | undefined {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  return { ok: r.status === 0, output: r.status === 0 ? r.stdout : r.stderr };
}

export const hasKubectl = (): boolean => !spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).error;

/**
 * Parses each environment with its app's own config loader (`load<Name>Config` exported by
 * apps/<app>/src/<app>.config.ts), as compiled in dist/ — what the image runs. It runs in a child
 * node (the loaders import ESM-only NestJS). An app with no compiled config is reported as
 * `missing`. Returns, per item, the loader's error message or `ok`/`missing`.
 */
export function parseWithAppConfigs(
  items: { where: string; app: string; env: Record<string, string> }[],
): Record<string, string> {
  const script = `
    const { existsSync, readFileSync } = require('node:fs');
    const out = {};
    for (const { where, app, env } of JSON.parse(readFileSync(0, 'utf8'))) {
      const file = require('node:path').join(process.cwd(), 'dist/apps', app, 'src', app + '.config.js');
      if (!existsSync(file)) { out[where] = 'missing'; continue; }
      const mod = require(file);
      const load = Object.entries(mod).find(([k, v]) => /^load\\w*Config$/.test(k) && typeof v === 'function');
      if (!load) { out[where] = 'missing'; continue; }
      try { load[1](env); out[where] = 'ok'; } catch (e) { out[where] = String(e.message); }
    }
    process.stdout.write(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['-e', script], {
    cwd: ROOT,
    input: JSON.stringify(items),
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
  });
  if (r.status !== 0) throw new Error(`config check failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Resolves a container port reference (number or name) to a number. */
export function resolvePort(container: Obj, port: unknown): number | undefined {
  if (typeof port === 'number') return port;
  return (container.ports ?? []).find((p: Obj) => p.name === port)?.containerPort;
}

/** True when every selector label is on the pod template. */
export function selects(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector || !Object.keys(selector).length) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** What deploy/base applies (the files its kustomization lists), and lookups into it. */
export interface Base {
  kustomization: Obj;
  docs: Doc[];
  objects: Obj[];
  find(kind: string, name: string): Obj | undefined;
  configMap(name: string): Record<string, string>;
  /** The environment a container would see: envFrom ConfigMaps, then env (secret refs as placeholders). */
  effectiveEnv(container: Obj): Record<string, string>;
}

const PLACEHOLDER_SECRETS: Record<string, string> = {
  DATABASE_URL: 'postgres://toolplane:secret@db.example:5432/toolplane',
};

export function loadBase(): Base {
  const file = join(BASE, 'kustomization.yaml');
  const kustomization: Obj = existsSync(file) ? parseYamlFile(file)[0].object : {};
  const docs = ((kustomization.resources ?? []) as string[])
    .map((r) => join(BASE, r))
    .filter((f) => existsSync(f) && statSync(f).isFile())
    .flatMap((f) => parseYamlFile(f));
  const objects = docs.map((d) => d.object);
  const find = (kind: string, name: string): Obj | undefined =>
    objects.find((o) => o.kind === kind && o.metadata?.name === name);
  const configMap = (name: string): Record<string, string> => find('ConfigMap', name)?.data ?? {};
  const effectiveEnv = (container: Obj): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const from of container.envFrom ?? [])
      if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name));
    for (const e of container.env ?? []) {
      if (e.value !== undefined) env[e.name] = String(e.value);
      else if (e.valueFrom?.secretKeyRef) env[e.name] = PLACEHOLDER_SECRETS[e.name] ?? 'placeholder';
      else if (e.valueFrom?.configMapKeyRef)
        env[e.name] = configMap(e.valueFrom.configMapKeyRef.name)[e.valueFrom.configMapKeyRef.key];
    }
    return env;
  };
  return { kustomization, docs, objects, find, configMap, effectiveEnv };
}

/** A Deployment's replicas in steady state: its HorizontalPodAutoscaler's minimum, else spec.replicas (default 1). */
export function desiredReplicas(objects: Obj[], deployment: Obj): number {
  const hpa = autoscalerOf(objects, deployment);
  return hpa?.spec?.minReplicas ?? deployment.spec?.replicas ?? 1;
}

/** The HorizontalPodAutoscaler that scales a Deployment, if any. */
export function autoscalerOf(objects: Obj[], deployment: Obj): Obj | undefined {
  return objects.find(
    (o) =>
      o.kind === 'HorizontalPodAutoscaler' &&
      o.spec?.scaleTargetRef?.kind === 'Deployment' &&
      o.spec.scaleTargetRef.name === deployment.metadata?.name,
  );
}

/** Helm values files (deploy/nats/helm-values.yaml): YAML, but not Kubernetes objects. */
export const isHelmValues = (file: string): boolean => /(^|\/)helm-values\.ya?ml$/.test(file);
