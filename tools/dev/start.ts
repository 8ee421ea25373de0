/**
 * `npm start`: runs the whole stack on this machine.
 * - First the install step shared with CI (tools/dev/prerequisites.sh): bubblewrap, slirp4netns
 *   and python3 for runner-local, installed with apt-get when missing and this runs as root.
 * - NATS at NATS_URL (default nats://127.0.0.1:4222); if none answers, starts `nats-server -js`
 *   from PATH, or says how to get one.
 * - Postgres at DATABASE_URL (default postgres://postgres@127.0.0.1:5432/toolplane, created if
 *   missing); if none answers, an embedded Postgres (PGlite) served on a local socket.
 * - runner-e2b: with E2B_API_KEY set, against E2B itself; without one, against the E2B fake
 *   (tools/fakes/e2b, started here, sandboxes under bubblewrap) with a development key, and says so.
 * - runner-modal: with MODAL_TOKEN_ID set, against Modal itself; without one, against the Modal fake
 *   (tools/fakes/modal, the real `modal` SDK's gRPC protocol, sandboxes under bubblewrap), and says so.
 * - web-tools: with EXA_API_KEY set, web_search and fetch_webpage use Exa itself; without one, the
 *   Exa fake (tools/fakes/exa, canned results) with a development key, and says so.
 * - mcp-gateway: MCP clients on http://127.0.0.1:GATEWAY_PORT (default 8090), printed with the rest.
 * - Every app from dist/, migrations applied at start, pretty logs; an app that exits is restarted
 *   with back-off (tools/dev/supervisor.ts); one that crash-loops stops the stack, named.
 */
import { AuthTokensList } from '@toolplane/contracts';
import { connect } from '@nats-io/transport-node';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { join, resolve } from 'node:path';
import { Client } from 'pg';

import { startE2bFake, type E2bFake } from '../fakes/e2b/e2b-fake';
import { startExaFake, type ExaFake } from '../fakes/exa/exa-fake';
import { startModalFake, type ModalFake } from '../fakes/modal/modal-fake';
import { ADMIN_TOKEN_FILE, ask } from './dev-auth';
import { DEFAULT_SUPERVISOR_OPTIONS, Supervisor } from './supervisor';

const ROOT = resolve(__dirname, '..', '..', '..');
const APPS = [
  { name: 'schema', port: 8082 },
  { name: 'registry', port: 8081 },
  { name: 'credentials', port: 8085 },
  { name: 'runner-local', port: 8084 },
  { name: 'executor', port: 8083 },
  { name: 'mcp-sync', port: 8086 },
  { name: 'runner-e2b', port: 8087 },
  { name: 'runner-modal', port: 8088 },
  { name: 'web-tools', port: 8089 },
  { name: 'mcp-gateway', port: 8091 },
] as const;
/** Where MCP clients connect (the gateway's GATEWAY_PORT, 8090 unless set). */
const GATEWAY_PORT = Number(process.env.GATEWAY_PORT) || 8090;
const children: ChildProcess[] = [];
const say = (line: string): void => void process.stdout.write(`[toolplane] ${line}\n`);

function reachable(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((res) => {
    const s = tcpConnect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      res(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

async function ensureNats(url: string): Promise<void> {
  const u = new URL(url.split(',')[0]!.replace(/^nats:/, 'http:'));
  const host = u.hostname;
  const port = Number(u.port || 4222);
  if (await reachable(host, port)) return say(`NATS: using ${url}`);
  const which = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' });
  const bin = which.stdout.trim() || (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : '');
  if (!bin) {
    say(`No NATS at ${url} and no nats-server on PATH: install it (apt-get install nats-server) or set NATS_URL.`);
    process.exit(1);
  }
  const dir = join(ROOT, '.toolplane', 'nats');
  mkdirSync(dir, { recursive: true });
  const proc = spawn(bin, ['-a', host, '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
  children.push(proc);
  for (let i = 0; i < 50 && !(await reachable(host, port)); i++) await new Promise((r) => setTimeout(r, 100));
  say(`NATS: started ${bin} with JetStream on ${host}:${port} (data in .toolplane/nats)`);
}

async function ensurePostgres(url: string): Promise<{ url: string; poolMax?: number }> {
  const target = new URL(url);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    const db = decodeURIComponent(target.pathname.slice(1));
    const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [db]);
    if (exists.rowCount === 0) {
      await c.query(`CREATE DATABASE "${db.replace(/"/g, '""')}"`);
      say(`Postgres: created database ${db}`);
    }
    say(`Postgres: using ${redact(url)}`);
    return { url };
  } catch (e) {
    say(`Postgres: none reachable at ${redact(url)} (${(e as Error).message}); starting an embedded Postgres (PGlite)`);
    return startEmbeddedPostgres();
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function startEmbeddedPostgres(): Promise<{ url: string; poolMax: number }> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dir = join(ROOT, '.toolplane', 'pglite');
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const port = 55432;
  const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: 4 } as never);
  await server.start();
  say(`Postgres: embedded PGlite on 127.0.0.1:${port} (data in .toolplane/pglite)`);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, poolMax: 1 };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}

/**
 * The apps run under the supervisor: one that exits is restarted with a doubling back-off, as
 * Kubernetes would; one that crash-loops stops the stack, named. Tunable for a session:
 * TOOLPLANE_RESTART_BACKOFF_MS, TOOLPLANE_RESTART_BACKOFF_MAX_MS, TOOLPLANE_CRASH_LOOP_CRASHES,
 * TOOLPLANE_CRASH_LOOP_WINDOW_MS.
 */
const numberEnv = (name: string, fallback: number): number => {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};
const supervisor = new Supervisor({
  backoffMs: numberEnv('TOOLPLANE_RESTART_BACKOFF_MS', DEFAULT_SUPERVISOR_OPTIONS.backoffMs),
  backoffMaxMs: numberEnv('TOOLPLANE_RESTART_BACKOFF_MAX_MS', DEFAULT_SUPERVISOR_OPTIONS.backoffMaxMs),
  maxCrashes: numberEnv('TOOLPLANE_CRASH_LOOP_CRASHES', DEFAULT_SUPERVISOR_OPTIONS.maxCrashes),
  windowMs: numberEnv('TOOLPLANE_CRASH_LOOP_WINDOW_MS', DEFAULT_SUPERVISOR_OPTIONS.windowMs),
  stableAfterMs: DEFAULT_SUPERVISOR_OPTIONS.stableAfterMs,
  say,
  onCrashLoop: () => void stop(1),
});

function startApp(name: string, port: number, env: NodeJS.ProcessEnv): ChildProcess {
  const entry = join(ROOT, 'dist', 'apps', name, 'src', 'main.js');
  return supervisor.add(name, () =>
    spawn(process.execPath, ['--enable-source-maps', entry], {
      cwd: ROOT,
      env: { ...env, HEALTH_PORT: String(port) },
      stdio: 'inherit',
    }),
  );
}

let stopping = false;
let e2bFake: E2bFake | undefined;
let modalFake: ModalFake | undefined;
let exaFake: ExaFake | undefined;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await supervisor.stopAll();
  for (const c of [...children].reverse()) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r)))));
  await e2bFake?.close().catch(() => undefined);
  await modalFake?.close().catch(() => undefined);
  await exaFake?.close().catch(() => undefined);
  process.exit(code);
}

/**
 * runner-e2b's E2B: E2B itself when E2B_API_KEY (or E2B_API_URL) is set; else the E2B fake, started
 * here, with a development key for orgs that set none of their own.
 */
async function e2bEnv(): Promise<NodeJS.ProcessEnv> {
  if (process.env.E2B_API_KEY || process.env.E2B_API_URL) {
    say(
      `E2B: using ${process.env.E2B_API_URL ?? 'E2B (api.e2b.app)'}${process.env.E2B_API_KEY ? ' with E2B_API_KEY from the environment' : ''}`,
    );
    return {};
  }
  try {
    e2bFake = await startE2bFake({ workRoot: join(ROOT, '.toolplane') });
  } catch (e) {
    say(
      `E2B: no E2B_API_KEY and the E2B fake could not start (${(e as Error).message}): runner-e2b runs for orgs that set their own key only`,
    );
    return {};
  }
  say(
    `E2B: no E2B_API_KEY set: runner-e2b uses the local E2B fake at ${e2bFake.apiUrl} (sandboxes are bubblewrap sandboxes on this machine, not E2B's)`,
  );
  return { E2B_API_URL: e2bFake.apiUrl, E2B_SANDBOX_URL: e2bFake.sandboxUrl, E2B_API_KEY: 'e2b_development_fake_key' };
}

/**
 * runner-modal's Modal: Modal itself when MODAL_TOKEN_ID (or MODAL_SERVER_URL) is set; else the
 * Modal fake (tools/fakes/modal), started here, with a development token pair for orgs that set none.
 */
async function modalEnv(): Promise<NodeJS.ProcessEnv> {
  if (process.env.MODAL_TOKEN_ID || process.env.MODAL_SERVER_URL) {
    say(
      `Modal: using ${process.env.MODAL_SERVER_URL ?? 'Modal (api.modal.com)'}${process.env.MODAL_TOKEN_ID ? ' with MODAL_TOKEN_ID/MODAL_TOKEN_SECRET from the environment' : ''}`,
    );
    return {};
  }
  try {
    modalFake = await startModalFake({ workRoot: join(ROOT, '.toolplane') });
  } catch (e) {
    say(
      `Modal: no MODAL_TOKEN_ID and the Modal fake could not start (${(e as Error).message}): runner-modal runs for orgs that set their own token only`,
    );
    return {};
  }
  say(
    `Modal: no MODAL_TOKEN_ID set: runner-modal uses the local Modal fake at ${modalFake.serverUrl} (sandboxes are bubblewrap sandboxes on this machine, not Modal's)`,
  );
  return {
    MODAL_SERVER_URL: modalFake.serverUrl,
    MODAL_TOKEN_ID: 'ak-development-fake',
    MODAL_TOKEN_SECRET: 'as-development-fake',
    MODAL_PYTHON: '/usr/bin/python3',
  };
}

/**
 * web-tools' Exa: Exa itself when EXA_API_KEY (or EXA_BASE_URL) is set; else the Exa fake (canned
 * results), started here, with a development key for agents that bring none of their own.
 */
async function exaEnv(): Promise<NodeJS.ProcessEnv> {
  if (process.env.EXA_API_KEY || process.env.EXA_BASE_URL) {
    say(
      `Exa: using ${process.env.EXA_BASE_URL ?? 'Exa (api.exa.ai)'}${process.env.EXA_API_KEY ? ' with EXA_API_KEY from the environment' : ''}`,
    );
    return {};
  }
  try {
    exaFake = await startExaFake();
  } catch (e) {
    say(
      `Exa: no EXA_API_KEY and the Exa fake could not start (${(e as Error).message}): web_search works only for agents with their own EXA_API_KEY`,
    );
    return {};
  }
  say(
    `Exa: no EXA_API_KEY set: web-tools uses the local Exa fake at ${exaFake.url} (canned search results, not Exa's)`,
  );
  return { EXA_BASE_URL: exaFake.url, EXA_API_KEY: 'exa-development-fake-key' };
}

async function waitReady(port: number, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return true;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/**
 * The development operator token: created once (mode 0600) by the credentials CLI from the
 * development key ring; made again if it no longer verifies (a new key or database).
 */
async function ensureAdminToken(env: NodeJS.ProcessEnv, natsUrl: string): Promise<void> {
  if (existsSync(ADMIN_TOKEN_FILE) && (await adminTokenWorks(natsUrl))) return;
  if (existsSync(ADMIN_TOKEN_FILE)) {
    renameSync(ADMIN_TOKEN_FILE, `${ADMIN_TOKEN_FILE}.stale`);
    say('the development admin token no longer verifies (new key ring or database): making a new one');
  }
  const cli = join(ROOT, 'dist', 'apps', 'credentials', 'src', 'database', 'token-cli.js');
  const r = spawnSync(process.execPath, [cli, 'operator', '--name', 'development', '--out', ADMIN_TOKEN_FILE], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`could not create the development admin token: ${r.stderr.trim()}`);
  say(`created the development admin token in ${ADMIN_TOKEN_FILE}`);
}

async function adminTokenWorks(natsUrl: string): Promise<boolean> {
  const nc = await connect({ servers: natsUrl });
  try {
    const r = await ask(
      nc,
      AuthTokensList.subject,
      { org_id: 'acme', limit: 1 },
      readFileSync(ADMIN_TOKEN_FILE, 'utf8').trim(),
    );
    return !r.error;
  } finally {
    await nc.close();
  }
}

/** The install step shared with CI: stops the start with its message when something cannot be installed. */
function ensurePrerequisites(): void {
  const r = spawnSync('bash', [join(ROOT, 'tools', 'dev', 'prerequisites.sh')], { stdio: 'inherit' });
  if (r.status !== 0) {
    say('the prerequisites above are missing: install them and run `npm start` again.');
    process.exit(1);
  }
}

/**
 * Development: the reference MCP servers installed with the project may run over stdio (each in
 * its sandbox, reading node_modules only), e.g. `{"transport": "stdio", "command": <this node>,
 * "args": ["<root>/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]}`.
 */
function developmentStdioAllowlist(): string {
  const modules = join(ROOT, 'node_modules');
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const server = (name: string) => escape(join(modules, '@modelcontextprotocol', name, 'dist', 'index.js'));
  return JSON.stringify([
    { command: process.execPath, args: [server('server-everything'), 'stdio'], read_paths: [modules] },
    { command: process.execPath, args: [server('server-memory')], read_paths: [modules], env: ['MEMORY_FILE_PATH'] },
  ]);
}

async function main(): Promise<void> {
  if (process.env.RUNNER_ISOLATION !== 'unsafe') ensurePrerequisites();
  const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  await ensureNats(natsUrl);
  const pg = await ensurePostgres(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/toolplane');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NATS_URL: natsUrl,
    DATABASE_URL: pg.url,
    ...(pg.poolMax ? { DB_POOL_MAX: String(pg.poolMax) } : {}),
    DB_MIGRATE_ON_START: 'true',
    TOOLPLANE_PROFILE: process.env.TOOLPLANE_PROFILE ?? 'development',
    LOG_FORMAT: process.env.LOG_FORMAT ?? 'pretty',
    MCP_STDIO_ALLOWED_COMMANDS: process.env.MCP_STDIO_ALLOWED_COMMANDS ?? developmentStdioAllowlist(),
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      say(`${sig}: stopping the stack`);
      void stop(0);
    });
  const e2b = await e2bEnv();
  const modal = await modalEnv();
  const exa = await exaEnv();
  const gateway = { GATEWAY_PORT: String(GATEWAY_PORT), GATEWAY_HOST: process.env.GATEWAY_HOST ?? '127.0.0.1' };
  const envOf: Partial<Record<(typeof APPS)[number]['name'], NodeJS.ProcessEnv>> = {
    'runner-e2b': e2b,
    'runner-modal': modal,
    'web-tools': exa,
    'mcp-gateway': gateway,
  };
  for (const app of APPS) {
    startApp(app.name, app.port, { ...env, ...envOf[app.name] });
    if (!(await waitReady(app.port))) {
      say(`${app.name} did not become ready on :${app.port}`);
      return stop(1);
    }
  }
  await ensureAdminToken(env, natsUrl);
  say('Toolplane is up:');
  for (const app of APPS) say(`  ${app.name.padEnd(13)} health http://127.0.0.1:${app.port}/readyz`);
  say(`  public API    NATS ${natsUrl}  subjects toolplane.v1.*  (try: npm run example)`);
  say(
    `  MCP gateway   http://127.0.0.1:${GATEWAY_PORT}/mcp/agents/<agent_id>  or  /mcp/toolsets/<name>  (bearer: an org token; \`npm run toolplane -- mcp-url --agent <agent_id>\` prints client configs)`,
  );
  say(
    `  admin token   ${ADMIN_TOKEN_FILE} (development operator token: mints org tokens; \`npm run token -- --org acme\` prints one)`,
  );
  say('Press Ctrl+C to stop.');
}

main().catch((e) => {
  say(`failed to start: ${(e as Error).message}`);
  void stop(1);
});
