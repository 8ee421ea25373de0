import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { testDatabaseUrl } from './context';
import { natsUrl, ROOT } from './env';
import { ensureTestIdentity, mintOperatorToken } from './identity';
import { testStdioAllowlist } from './stdio-allowlist';

/** The key mcp-sync sealed server secrets with before the credentials key ring (legacy rows are read with it once, then sealed again). */
export const LEGACY_MCP_KEY = Buffer.alloc(32, 42).toString('base64');

/** Every app a test stack can start; runner-e2b and runner-modal only where a test starts them (with their fakes), never by default. */
export type AppName =
  | 'registry'
  | 'schema'
  | 'credentials'
  | 'executor'
  | 'runner-local'
  | 'runner-e2b'
  | 'runner-modal'
  | 'mcp-sync'
  | 'web-tools'
  | 'mcp-gateway';
export const ALL_APPS: AppName[] = [
  'schema',
  'registry',
  'credentials',
  'runner-local',
  'executor',
  'mcp-sync',
  'web-tools',
  'mcp-gateway',
];
/** The apps a tool call needs, from upsert to a local run and its record (no MCP, web or gateway). */
export const CALL_APPS: AppName[] = ['schema', 'registry', 'credentials', 'runner-local', 'executor'];

/**
 * The stack most e2e files start: the call apps (CALL_APPS) on the run's database and their own
 * `prefix`, warnings only, with `appEnv` per app.
 */
export function startCallStack(prefix: string, appEnv: StackOptions['appEnv'] = {}): Promise<Stack> {
  return startStack({ prefix, databaseUrl: testDatabaseUrl(), apps: CALL_APPS, env: { LOG_LEVEL: 'warn' }, appEnv });
}

export interface StackOptions {
  prefix: string;
  databaseUrl: string;
  apps?: AppName[];
  env?: Record<string, string>;
  /** Per-app extra env. */
  appEnv?: Partial<Record<AppName, Record<string, string>>>;
  /** Another checkout whose dist/ to run (benchmarks against a baseline build); default this one. */
  root?: string;
  /** How long an app may take to become ready (default TOOLPLANE_TEST_READY_TIMEOUT_MS, else 90 s: a slow or busy machine starts apps slowly, and waiting costs nothing when they are quick). */
  readyTimeoutMs?: number;
}

export interface RunningApp {
  name: AppName;
  proc: ChildProcess;
  healthPort: number;
  /** The HTTP port of an app with an HTTP face (mcp-gateway). */
  httpPort?: number;
  output: () => string;
}

export interface Stack {
  prefix: string;
  apps: Map<AppName, RunningApp>;
  stopApp(name: AppName, signal?: NodeJS.Signals): Promise<number | null>;
  stop(): Promise<void>;
  /** Instances started beside the first of their app (addReplica), oldest first; stop() stops them too. */
  replicas: RunningApp[];
  /** Starts one more instance of `name` (same prefix, database and queue group) and waits until it is ready. */
  addReplica(name: AppName): Promise<RunningApp>;
}

// Whatever happens to the test process, the apps it spawned go with it.
const spawned = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * What an app's start costs, paid some hundred times a run (every stack, replica and restart):
 * about 3.5 s of CPU per app on this kind of machine, 40 % of it avoidable. V8's code cache on disk
 * (NODE_COMPILE_CACHE, shared by every app and run of this checkout) spares compiling the same
 * modules again; source maps (reading every loaded file's map: 30 % of a start) are on only with
 * TOOLPLANE_TEST_SOURCE_MAPS=1, for when an app's stack traces are what a failure needs.
 */
export const COMPILE_CACHE = join(ROOT, 'node_modules', '.cache', 'toolplane-node-compile');
const SOURCE_MAPS = process.env.TOOLPLANE_TEST_SOURCE_MAPS === '1' ? ['--enable-source-maps'] : [];

export function entryOf(app: AppName, root = ROOT): string {
  const entry = join(root, 'dist', 'apps', app, 'src', 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first (npm test does)`);
  return entry;
}

/** Starts apps from dist/ as real processes and waits until each is ready (/readyz). */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const apps = new Map<AppName, RunningApp>();
  const stack: Stack = {
    prefix: opts.prefix,
    apps,
    async stopApp(name, signal = 'SIGTERM') {
      const app = apps.get(name);
      if (!app) return null;
      apps.delete(name);
      return stopProcess(app.proc, signal);
    },
    async stop() {
      await Promise.all([...apps.keys()].map((n) => stack.stopApp(n)));
      await Promise.all(stack.replicas.splice(0).map((r) => stopProcess(r.proc)));
    },
    replicas: [],
    async addReplica(name) {
      const app = await startApp(name, opts);
      stack.replicas.push(app);
      return app;
    },
  };
  ensureTestIdentity();
  try {
    // Apps do not need each other to become ready: start them side by side.
    const started = await Promise.allSettled((opts.apps ?? ALL_APPS).map((name) => startApp(name, opts)));
    for (const r of started) if (r.status === 'fulfilled') apps.set(r.value.name, r.value);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    // The run's operator token: minted once, by the first stack whose credentials service is up.
    if (
      !process.env.TOOLPLANE_TEST_OPERATOR_TOKEN &&
      apps.has('credentials') &&
      !opts.env?.CREDENTIALS_KEYS &&
      !opts.appEnv?.credentials?.CREDENTIALS_KEYS
    ) {
      process.env.TOOLPLANE_TEST_OPERATOR_TOKEN = mintOperatorToken(opts.databaseUrl);
    }
  } catch (e) {
    await stack.stop();
    throw e;
  }
  return stack;
}

export async function startApp(name: AppName, opts: StackOptions): Promise<RunningApp> {
  const healthPort = await freePort();
  const httpPort = name === 'mcp-gateway' ? await freePort() : undefined;
  let out = '';
  const proc = spawn(process.execPath, [...SOURCE_MAPS, entryOf(name, opts.root)], {
    cwd: opts.root ?? ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      NODE_COMPILE_CACHE: COMPILE_CACHE,
      NATS_URL: natsUrl(),
      SUBJECT_PREFIX: opts.prefix,
      DATABASE_URL: opts.databaseUrl,
      DB_MIGRATE_ON_START: 'true',
      HEALTH_PORT: String(healthPort),
      HEALTH_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      TOOLPLANE_PROFILE: 'development',
      SHUTDOWN_GRACE_MS: '5000',
      SERVICE_KEYS_DIR: ensureTestIdentity().keysDir,
      ...(name === 'credentials' ? { CREDENTIALS_KEYS: ensureTestIdentity().credentialsKeys } : {}),
      ...(httpPort !== undefined ? { GATEWAY_PORT: String(httpPort), GATEWAY_HOST: '127.0.0.1' } : {}),
      // The conformance suite's Client ID Metadata Document (its authorization server never fetches it).
      ...(name === 'mcp-sync'
        ? {
            MCP_STDIO_ALLOWED_COMMANDS: testStdioAllowlist(),
            MCP_OAUTH_CLIENT_METADATA_URL: 'https://conformance-test.local/client-metadata.json',
            MCP_ENCRYPTION_KEY: LEGACY_MCP_KEY,
          }
        : {}),
      ...opts.env,
      ...opts.appEnv?.[name],
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(proc);
  proc.once('exit', () => spawned.delete(proc));
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  proc.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const app: RunningApp = {
    name,
    proc,
    healthPort,
    ...(httpPort !== undefined ? { httpPort } : {}),
    output: () => out,
  };
  await waitReady(app, opts.readyTimeoutMs ?? (Number(process.env.TOOLPLANE_TEST_READY_TIMEOUT_MS) || 90_000));
  return app;
}

async function waitReady(app: RunningApp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (app.proc.exitCode !== null)
      throw new Error(`${app.name} exited with ${app.proc.exitCode} before it was ready:\n${app.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${app.healthPort}/readyz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  app.proc.kill('SIGKILL');
  throw new Error(`${app.name} was not ready within ${timeoutMs} ms:\n${app.output()}`);
}

export function stopProcess(
  proc: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 10_000,
): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => {
    const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
    proc.kill(signal);
  });
}

/** One sample of an app's Prometheus `/metrics` (a metric without labels); NaN when it is absent. */
export async function metricOf(app: RunningApp, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${app.healthPort}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}
