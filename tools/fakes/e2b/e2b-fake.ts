/**
 * A protocol-faithful fake of E2B for machines that reach no cloud: the control-plane REST API
 * (api.e2b.app) and envd (the daemon in each sandbox, reached through the sandbox proxy), both on
 * one node:http server, so the unmodified `e2b` SDK (2.51) works against it with
 *
 *   E2B_API_URL=<apiUrl>  E2B_SANDBOX_URL=<sandboxUrl>  E2B_API_KEY=<any accepted key>
 *
 * (or the `apiUrl` / `sandboxUrl` / `apiKey` connection options). With E2B_SANDBOX_URL the SDK
 * sends all sandbox traffic to one URL with an `E2b-Sandbox-Id` header (e2b
 * `ConnectionConfig.getSandboxUrl`): requests with that header are envd's (envd.ts), the rest the
 * API's, and `/_fake/...` is this fake's own control surface (faults, latency, stats, reset).
 *
 * Control plane, as the SDK calls it (e2b `SandboxApi`, `SandboxPaginator`), with `X-API-KEY`:
 *   POST /v2/sandboxes, POST /sandboxes (v1)            create       → 201 Sandbox
 *   GET  /v2/sandboxes, GET /sandboxes (v1)             list         → 200 ListedSandbox[] (+ X-Next-Token)
 *   GET  /sandboxes/{id}                                info         → 200 SandboxDetail
 *   POST /v2/sandboxes/{id}/connect, /sandboxes/{id}/connect (v1)   → 200 running / 201 resumed
 *   POST /sandboxes/{id}/timeout                        setTimeout   → 204
 *   DELETE /sandboxes/{id}                              kill         → 204
 *   POST /sandboxes/{id}/pause, /sandboxes/{id}/resume (v1)
 * Errors are E2B's `{"code": <status>, "message": ...}`; the SDK maps 401 to AuthenticationError,
 * 429 to RateLimitError (retried when `Retry-After` is a delta), 503 to ServiceBusyError, 404 to
 * SandboxNotFoundError, anything else to SandboxError (`api/index.ts` `handleApiError`).
 *
 * Deliberate differences from E2B: commands have no network at all (E2B sandboxes have internet
 * unless told otherwise); `user: 'root'` runs as the same unprivileged uid as `user`; a paused
 * sandbox keeps its files but not its processes (no memory snapshot), and autoResume or a
 * `reboot` resume are refused (400); no PTY, watchDir, metrics, logs, snapshots, templates,
 * volumes or fork (501 / `unimplemented`); timeouts are not capped at E2B's 1 h / 24 h; a command
 * killed under bwrap by a signal the fake did not send exits with status 128+N; E2B_DEBUG mode
 * bypasses the control plane and is not supported. `/_fake/...` needs no API key.
 */
import { existsSync, promises as fs } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { prepareSupportDir, seccompProgram } from '@toolplane/sandbox';
import { readBody } from './connect-protocol';
import { ENVD_PORT, handleEnvd, json, sandboxNotFound, type EnvdHooks, type Fault, type FaultStatus } from './envd';
import { FakeSandbox, type SandboxSpec } from './fake-sandbox';
import type { SpawnPlan } from './sandbox-process';

/** The envd version the fake claims: new enough for every SDK path it serves (octet-stream uploads 0.5.7, file metadata 0.6.2). */
export const ENVD_VERSION = '0.6.4';
/** E2B's constant, deprecated `clientID`. */
const CLIENT_ID = '6532622b';
const MAX_PAGE = 100;

export type E2bFakeOp = 'create' | 'connect' | 'list' | 'info' | 'kill' | 'setTimeout' | 'pause' | 'command' | 'files';
export const E2B_FAKE_OPS: readonly E2bFakeOp[] = [
  'create',
  'connect',
  'list',
  'info',
  'kill',
  'setTimeout',
  'pause',
  'command',
  'files',
];
export type { FaultStatus } from './envd';

export interface E2bFakeOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** How long create waits before answering (default 0; E2B's published median is ~440 ms). */
  createLatencyMs?: number;
  /** API keys accepted in X-API-KEY; empty (default): any non-empty key. */
  apiKeys?: string[];
  /** 'bwrap' (default): each command in a bubblewrap sandbox; 'process': a plain child process, no isolation. */
  isolation?: 'bwrap' | 'process';
  /** Host paths bound read-only at the same path in every sandbox (e.g. a local pip wheelhouse). */
  readable?: string[];
  /** Parent of the fake's own directory (default os.tmpdir()). */
  workRoot?: string;
  /** Default /usr/bin/bwrap. */
  bwrapPath?: string;
  /** Uid/gid commands run as; default 65534 when the fake runs as root (bwrap maps root to host root), else the fake's own. */
  runAs?: { uid: number; gid: number };
  /** The `domain` create answers with (default 'e2b-fake.local'); clients reach sandboxes through sandboxUrl anyway. */
  domain?: string;
}

export interface E2bFakeFaultOptions {
  /** How many consecutive requests of the operation fail (default 1). */
  count?: number;
  /** 429 only: send `Retry-After` (seconds); the SDK then retries the control-plane call. */
  retryAfterSec?: number;
  message?: string;
}

export interface E2bFakeSandboxStats {
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
  state: 'running' | 'paused';
  startedAt: string;
  endAt: string;
  runningCommands: number;
}

export interface E2bFakeStats {
  creates: number;
  connects: number;
  lists: number;
  infos: number;
  kills: number;
  setTimeouts: number;
  pauses: number;
  /** process.Process/Start calls. */
  commands: number;
  /** /files requests and filesystem.Filesystem calls. */
  filesOps: number;
  /** Requests answered by an injected fault. */
  faultsServed: number;
  /** Sandboxes killed (or paused, with autoPause) by their timeout. */
  expired: number;
  /** Sandboxes alive (running or paused). */
  sandboxes: E2bFakeSandboxStats[];
}

export interface E2bFake {
  /** The value for E2B_API_URL. */
  readonly apiUrl: string;
  /** The value for E2B_SANDBOX_URL (the same server). */
  readonly sandboxUrl: string;
  /** The sandbox domain create reports. */
  readonly domain: string;
  /** Current create latency (ms). */
  readonly createLatencyMs: number;
  setCreateLatencyMs(ms: number): void;
  /** The next `count` requests of `op` answer `status` (E2B's error shapes; 502 on envd ops is the proxy's "sandbox not found"). */
  failNext(op: E2bFakeOp, status: FaultStatus, opts?: E2bFakeFaultOptions): void;
  clearFaults(): void;
  /** The sandbox of the next command dies while it runs (after `afterMs`, default 0, past its start): the stream is cut, the sandbox is gone. */
  killSandboxDuringNextCommand(opts?: { afterMs?: number }): void;
  /** The next process stream (Start or Connect) loses its HTTP connection right after the start event. */
  dropNextStream(): void;
  stats(): E2bFakeStats;
  /** Kills every sandbox and clears counters and pending faults; keeps the options (latency, keys). */
  reset(): Promise<void>;
  /** Kills everything, stops the server and removes the fake's directories. */
  close(): Promise<void>;
}

type Counter = Exclude<keyof E2bFakeStats, 'sandboxes'>;
const COUNTER_OF: Record<E2bFakeOp, Counter> = {
  create: 'creates',
  connect: 'connects',
  list: 'lists',
  info: 'infos',
  kill: 'kills',
  setTimeout: 'setTimeouts',
  pause: 'pauses',
  command: 'commands',
  files: 'filesOps',
};

export async function startE2bFake(opts: E2bFakeOptions = {}): Promise<E2bFake> {
  const fake = new E2bFakeServer(opts);
  await fake.start();
  return fake;
}

/** An HTTP error of the API: E2B's `{"code", "message"}` body. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly errorCode?: string,
  ) {
    super(message);
  }
}

class E2bFakeServer implements E2bFake {
  apiUrl = '';
  sandboxUrl = '';
  readonly domain: string;
  createLatencyMs: number;
  private readonly server: Server;
  private readonly sandboxes = new Map<string, FakeSandbox>();
  private readonly apiKeys: Set<string>;
  private readonly faults = new Map<E2bFakeOp, Fault[]>();
  private counters = zeroCounters();
  private killDuringCommand?: { afterMs: number };
  private dropStream = false;
  private workDir = '';
  private plan?: Omit<SpawnPlan, 'homeHost' | 'tmpHost'>;
  private closing = false;

  constructor(private readonly o: E2bFakeOptions) {
    this.domain = o.domain ?? 'e2b-fake.local';
    this.createLatencyMs = o.createLatencyMs ?? 0;
    this.apiKeys = new Set(o.apiKeys ?? []);
    this.server = createServer((req, res) => void this.route(req, res));
  }

  async start(): Promise<void> {
    const isolation = this.o.isolation ?? 'bwrap';
    const bwrapPath = this.o.bwrapPath ?? '/usr/bin/bwrap';
    if (isolation === 'bwrap' && !existsSync(bwrapPath)) {
      throw new Error(
        `E2B fake: bubblewrap is not at ${bwrapPath}: install it (apt-get install bubblewrap) or start the fake with isolation 'process'`,
      );
    }
    for (const r of this.o.readable ?? [])
      if (!path.isAbsolute(r) || !existsSync(r))
        throw new Error(`E2B fake: readable path ${r} must be an existing absolute path`);
    const root = process.getuid?.() === 0;
    const runAs = this.o.runAs ?? (root ? { uid: 65534, gid: 65534 } : undefined);
    this.workDir = path.join(
      this.o.workRoot ?? os.tmpdir(),
      `tp-e2b-fake-${process.pid}-${randomBytes(4).toString('hex')}`,
    );
    await fs.mkdir(this.workDir, { recursive: true, mode: 0o711 });
    await fs.chmod(this.workDir, 0o711); // the command uid walks through it to its sandbox's dirs
    const supportDir =
      isolation === 'bwrap'
        ? await prepareSupportDir(
            this.workDir,
            seccompProgram(),
            runAs?.uid ?? process.getuid?.() ?? 65534,
            runAs?.gid ?? process.getgid?.() ?? 65534,
          )
        : undefined;
    this.plan = {
      isolation,
      bwrapPath,
      ...(supportDir ? { supportDir } : {}),
      ...(runAs ? { runAs } : {}),
      readable: [...(this.o.readable ?? [])],
    };
    const host = this.o.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port ?? 0, host, () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    this.apiUrl = `http://${urlHost}:${port}`;
    this.sandboxUrl = this.apiUrl;
  }

  setCreateLatencyMs(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`createLatencyMs must be a non-negative number, got ${ms}`);
    this.createLatencyMs = ms;
  }

  failNext(op: E2bFakeOp, status: FaultStatus, opts: E2bFakeFaultOptions = {}): void {
    if (!E2B_FAKE_OPS.includes(op)) throw new Error(`unknown operation ${op}: one of ${E2B_FAKE_OPS.join(', ')}`);
    if (![401, 429, 500, 502, 503].includes(status))
      throw new Error(`fault status must be 401, 429, 500, 502 or 503, got ${status}`);
    const count = opts.count ?? 1;
    if (!Number.isInteger(count) || count < 1) throw new Error(`fault count must be a positive integer, got ${count}`);
    const queue = this.faults.get(op) ?? [];
    for (let i = 0; i < count; i++)
      queue.push({
        status,
        ...(opts.retryAfterSec !== undefined ? { retryAfterSec: opts.retryAfterSec } : {}),
        ...(opts.message ? { message: opts.message } : {}),
      });
    this.faults.set(op, queue);
  }

  clearFaults(): void {
    this.faults.clear();
    this.killDuringCommand = undefined;
    this.dropStream = false;
  }

  killSandboxDuringNextCommand(opts: { afterMs?: number } = {}): void {
    this.killDuringCommand = { afterMs: Math.max(0, opts.afterMs ?? 0) };
  }

  dropNextStream(): void {
    this.dropStream = true;
  }

  stats(): E2bFakeStats {
    return {
      ...this.counters,
      sandboxes: [...this.sandboxes.values()].map((s) => ({
        sandboxId: s.sandboxId,
        templateId: s.spec.templateId,
        metadata: { ...s.spec.metadata },
        state: s.state,
        startedAt: s.startedAt.toISOString(),
        endAt: s.endAt.toISOString(),
        runningCommands: [...s.processes.values()].filter((p) => p.running).length,
      })),
    };
  }

  async reset(): Promise<void> {
    await this.killAll();
    this.counters = zeroCounters();
    this.clearFaults();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.killAll();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.workDir) await fs.rm(this.workDir, { recursive: true, force: true });
  }

  // -------------------------------------------------------------------------------------------
  // routing

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const sandboxId = req.headers['e2b-sandbox-id'];
      if (typeof sandboxId === 'string') return await this.envd(sandboxId, req, res);
      const url = new URL(req.url ?? '/', 'http://api');
      if (url.pathname.startsWith('/_fake/')) return await this.control(url, req, res);
      await this.api(url, req, res);
    } catch (e) {
      if (res.headersSent) return void res.destroy();
      if (e instanceof ApiError)
        return json(
          res,
          e.status,
          { code: e.status, message: e.message, ...(e.errorCode ? { error_code: e.errorCode } : {}) },
          e.headers,
        );
      json(res, 500, { code: 500, message: `E2B fake: ${(e as Error).message}` });
    }
  }

  private async envd(sandboxId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox?.running) return sandboxNotFound(res, sandboxId);
    const port = req.headers['e2b-sandbox-port'];
    if (port !== undefined && port !== String(ENVD_PORT))
      return sandboxNotFound(res, sandboxId, `The sandbox is running but port ${port} is not open`);
    await handleEnvd(this.envdHooks, sandbox, req, res);
  }

  private readonly envdHooks: EnvdHooks = {
    takeFault: (op) => this.takeFault(op),
    count: (op) => this.counters[COUNTER_OF[op]]++,
    takeKillDuringCommand: () => {
      const k = this.killDuringCommand;
      this.killDuringCommand = undefined;
      return k;
    },
    takeDropStream: () => {
      const d = this.dropStream;
      this.dropStream = false;
      return d;
    },
    killSandbox: (sandbox) => this.kill(sandbox),
  };

  private takeFault(op: E2bFakeOp): Fault | undefined {
    const fault = this.faults.get(op)?.shift();
    if (fault) this.counters.faultsServed++;
    return fault;
  }

  // -------------------------------------------------------------------------------------------
  // control plane

  private async api(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = matchRoute(req.method ?? 'GET', url.pathname);
    if (!route) throw new ApiError(501, `${req.method} ${url.pathname} is not implemented by the E2B fake`);
    this.authenticate(req);
    this.counters[COUNTER_OF[route.op]]++;
    const fault = this.takeFault(route.op);
    if (fault) throw apiFault(route.op, fault);
    const body = req.method === 'POST' || req.method === 'PUT' ? await readJson(req) : {};
    switch (route.name) {
      case 'create':
        return this.create(route.version, body, res);
      case 'list':
        return this.list(route.version, url, res);
      case 'info':
        return json(res, 200, this.detail(this.find(route.id!)));
      case 'kill':
        await this.kill(this.find(route.id!));
        return void res.writeHead(204).end();
      case 'setTimeout':
        return this.setTimeout(this.find(route.id!), body, res);
      case 'connect':
        return this.connect(route.version, this.find(route.id!), body, res);
      case 'resume':
        return this.resume(this.find(route.id!), body, res);
      case 'pause':
        return this.pause(this.find(route.id!), res);
    }
  }

  /** X-API-KEY: required; one of `apiKeys` when those are set. */
  private authenticate(req: IncomingMessage): void {
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || !key || (this.apiKeys.size > 0 && !this.apiKeys.has(key))) {
      throw new ApiError(401, 'Invalid API key, please visit https://e2b.dev/docs to get your API key.');
    }
  }

  private find(id: string): FakeSandbox {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new ApiError(404, `sandbox "${id}" doesn't exist or you don't have access to it`);
    return sandbox;
  }

  private async create(version: 1 | 2, body: Record<string, unknown>, res: ServerResponse): Promise<void> {
    const spec = parseNewSandbox(version, body);
    if (this.createLatencyMs > 0) await new Promise((r) => setTimeout(r, this.createLatencyMs));
    if (this.closing) throw new ApiError(503, 'the E2B fake is shutting down');
    const sandbox = await FakeSandbox.create(
      spec,
      this.workDir,
      this.plan!,
      (s) => void this.expire(s).catch(warn('expiring a sandbox')),
    );
    this.sandboxes.set(sandbox.sandboxId, sandbox);
    json(res, 201, this.sandboxJson(sandbox));
  }

  private list(version: 1 | 2, url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const metadata = parseMetadataFilter(q.get('metadata'));
    const states =
      version === 1
        ? ['running']
        : q
            .getAll('state')
            .flatMap((s) => s.split(','))
            .filter(Boolean);
    for (const s of states)
      if (s !== 'running' && s !== 'paused') throw new ApiError(400, `invalid state ${s}: running or paused`);
    const wanted = new Set(states.length ? states : ['running', 'paused']);
    const template = version === 2 ? q.get('template') || undefined : undefined;
    const startedAfter = version === 2 && q.get('startedAfter') ? Date.parse(q.get('startedAfter')!) : undefined;
    if (startedAfter !== undefined && Number.isNaN(startedAfter))
      throw new ApiError(400, `invalid startedAfter ${q.get('startedAfter')}`);
    const order = q.get('order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw new ApiError(400, `invalid order ${order}: asc or desc`);
    const limit = q.get('limit') === null ? MAX_PAGE : Number(q.get('limit'));
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
      throw new ApiError(400, `limit must be an integer between 1 and ${MAX_PAGE}`);

    const matching = [...this.sandboxes.values()]
      .filter((s) => wanted.has(s.state))
      .filter((s) => Object.entries(metadata).every(([k, v]) => s.spec.metadata[k] === v))
      .filter((s) => !template || s.spec.templateId === template || s.spec.alias === template)
      .filter((s) => startedAfter === undefined || s.startedAt.getTime() >= startedAfter)
      .sort((a, b) => compareCursor(cursorOf(a), cursorOf(b)) * (order === 'asc' ? 1 : -1));
    const headers: Record<string, string> = {};
    if (wanted.has('running'))
      headers['x-total-running'] = String(matching.filter((s) => s.state === 'running').length);
    if (version === 1)
      return json(
        res,
        200,
        matching.map((s) => this.listed(s)),
        headers,
      );

    // nextToken: the (startedAt, id) of the last sandbox of the previous page; robust to deletions.
    const token = q.get('nextToken');
    let start = 0;
    if (token) {
      const after = decodeCursor(token);
      start = matching.findIndex((s) => compareCursor(cursorOf(s), after) * (order === 'asc' ? 1 : -1) > 0);
      if (start < 0) start = matching.length;
    }
    const page = matching.slice(start, start + limit);
    if (start + limit < matching.length) headers['x-next-token'] = encodeCursor(cursorOf(page[page.length - 1]!));
    json(
      res,
      200,
      page.map((s) => this.listed(s)),
      headers,
    );
  }

  private setTimeout(sandbox: FakeSandbox, body: Record<string, unknown>, res: ServerResponse): void {
    if (!sandbox.running) throw new ApiError(404, `sandbox "${sandbox.sandboxId}" is not running`);
    sandbox.setTimeoutS(timeoutField(body.timeout, undefined));
    res.writeHead(204).end();
  }

  /** Connect: a running sandbox keeps running and its TTL is only extended; a paused one resumes. */
  private connect(version: 1 | 2, sandbox: FakeSandbox, body: Record<string, unknown>, res: ServerResponse): void {
    const timeoutS = timeoutField(body.timeout, version === 2 ? 300 : undefined);
    if (body.memory === false)
      throw new ApiError(400, 'resuming without memory (onResume: reboot) is not supported by the E2B fake');
    if (sandbox.running) {
      sandbox.extendTimeoutS(timeoutS);
      return json(res, 200, this.sandboxJson(sandbox));
    }
    sandbox.resume(timeoutS);
    json(res, 201, this.sandboxJson(sandbox));
  }

  private resume(sandbox: FakeSandbox, body: Record<string, unknown>, res: ServerResponse): void {
    if (sandbox.running) throw new ApiError(409, `sandbox "${sandbox.sandboxId}" is already running`);
    sandbox.resume(timeoutField(body.timeout, 15));
    json(res, 201, this.sandboxJson(sandbox));
  }

  private async pause(sandbox: FakeSandbox, res: ServerResponse): Promise<void> {
    if (!sandbox.running) throw new ApiError(409, `sandbox "${sandbox.sandboxId}" is already paused`);
    await sandbox.pause();
    res.writeHead(204).end();
  }

  private async kill(sandbox: FakeSandbox): Promise<void> {
    this.sandboxes.delete(sandbox.sandboxId);
    await sandbox.destroy();
  }

  private async expire(sandbox: FakeSandbox): Promise<void> {
    if (!this.sandboxes.has(sandbox.sandboxId) || !sandbox.running) return;
    this.counters.expired++;
    if (sandbox.spec.autoPause) await sandbox.pause();
    else await this.kill(sandbox);
  }

  private async killAll(): Promise<void> {
    const all = [...this.sandboxes.values()];
    this.sandboxes.clear();
    await Promise.all(all.map((s) => s.destroy()));
  }

  /** components['schemas']['Sandbox']: the create/connect answer. */
  private sandboxJson(s: FakeSandbox) {
    return {
      sandboxID: s.sandboxId,
      templateID: s.spec.templateId,
      ...(s.spec.alias ? { alias: s.spec.alias } : {}),
      clientID: CLIENT_ID,
      envdVersion: ENVD_VERSION,
      ...(s.envdAccessToken ? { envdAccessToken: s.envdAccessToken } : {}),
      domain: this.domain,
      trafficAccessToken: null,
    };
  }

  /** components['schemas']['ListedSandbox']. */
  private listed(s: FakeSandbox) {
    return {
      sandboxID: s.sandboxId,
      templateID: s.spec.templateId,
      ...(s.spec.alias ? { alias: s.spec.alias } : {}),
      clientID: CLIENT_ID,
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 512,
      envdVersion: ENVD_VERSION,
      metadata: s.spec.metadata,
      startedAt: s.startedAt.toISOString(),
      endAt: s.endAt.toISOString(),
      state: s.state,
      volumeMounts: [],
    };
  }

  /** components['schemas']['SandboxDetail']. */
  private detail(s: FakeSandbox) {
    return {
      ...this.listed(s),
      ...(s.envdAccessToken ? { envdAccessToken: s.envdAccessToken } : {}),
      domain: this.domain,
      allowInternetAccess: s.spec.allowInternetAccess ?? null,
      lifecycle: { onTimeout: s.spec.autoPause ? 'pause' : 'kill', autoResume: false },
    };
  }

  // -------------------------------------------------------------------------------------------
  // /_fake: the fake's own controls (not E2B API), mirroring the in-process methods

  private async control(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = req.method === 'POST' || req.method === 'PUT' ? await readJson(req) : {};
    const route = `${req.method} ${url.pathname}`;
    try {
      switch (route) {
        case 'GET /_fake/stats':
          return json(res, 200, this.stats());
        case 'POST /_fake/reset':
          await this.reset();
          return json(res, 200, {});
        case 'POST /_fake/faults':
          this.failNext(body.op as E2bFakeOp, Number(body.status) as FaultStatus, {
            ...(body.count !== undefined ? { count: Number(body.count) } : {}),
            ...(body.retryAfterSec !== undefined ? { retryAfterSec: Number(body.retryAfterSec) } : {}),
            ...(typeof body.message === 'string' ? { message: body.message } : {}),
          });
          return json(res, 200, {});
        case 'DELETE /_fake/faults':
          this.clearFaults();
          return json(res, 200, {});
        case 'POST /_fake/kill-sandbox-during-next-command':
          this.killSandboxDuringNextCommand(body.afterMs !== undefined ? { afterMs: Number(body.afterMs) } : {});
          return json(res, 200, {});
        case 'POST /_fake/drop-next-stream':
          this.dropNextStream();
          return json(res, 200, {});
        case 'GET /_fake/create-latency':
          return json(res, 200, { ms: this.createLatencyMs });
        case 'PUT /_fake/create-latency':
        case 'POST /_fake/create-latency':
          this.setCreateLatencyMs(Number(body.ms));
          return json(res, 200, { ms: this.createLatencyMs });
      }
    } catch (e) {
      throw new ApiError(400, (e as Error).message);
    }
    throw new ApiError(404, `no fake control at ${route}`);
  }
}

// ---------------------------------------------------------------------------------------------

type RouteName = 'create' | 'list' | 'info' | 'kill' | 'setTimeout' | 'connect' | 'resume' | 'pause';
interface Route {
  name: RouteName;
  op: E2bFakeOp;
  version: 1 | 2;
  id?: string;
}

function matchRoute(method: string, pathname: string): Route | undefined {
  const v2 = pathname.startsWith('/v2/');
  const p = v2 ? pathname.slice(3) : pathname;
  const version = v2 ? 2 : 1;
  if (p === '/sandboxes') {
    if (method === 'POST') return { name: 'create', op: 'create', version };
    if (method === 'GET') return { name: 'list', op: 'list', version };
    return undefined;
  }
  const m = /^\/sandboxes\/([^/]+)(?:\/([a-z]+))?$/.exec(p);
  if (!m) return undefined;
  const id = decodeURIComponent(m[1]!);
  const action = m[2];
  if (v2)
    return action === 'connect' && method === 'POST' ? { name: 'connect', op: 'connect', version, id } : undefined;
  if (!action && method === 'GET') return { name: 'info', op: 'info', version, id };
  if (!action && method === 'DELETE') return { name: 'kill', op: 'kill', version, id };
  if (method !== 'POST') return undefined;
  if (action === 'timeout') return { name: 'setTimeout', op: 'setTimeout', version, id };
  if (action === 'connect') return { name: 'connect', op: 'connect', version, id };
  if (action === 'resume') return { name: 'resume', op: 'connect', version, id };
  if (action === 'pause') return { name: 'pause', op: 'pause', version, id };
  return undefined;
}

/** An injected fault in E2B's shapes (429 optionally with Retry-After; a refused create's 503 names why). */
function apiFault(op: E2bFakeOp, fault: Fault): ApiError {
  const messages: Record<FaultStatus, string> = {
    401: 'Invalid API key, please visit https://e2b.dev/docs to get your API key.',
    429: 'Rate limit exceeded, please try again later.',
    500: 'Internal server error',
    502: 'Bad gateway',
    503: 'Service temporarily unavailable',
  };
  const headers: Record<string, string> =
    fault.status === 429 && fault.retryAfterSec !== undefined ? { 'retry-after': String(fault.retryAfterSec) } : {};
  return new ApiError(
    fault.status,
    fault.message ?? messages[fault.status],
    headers,
    fault.status === 503 && op === 'create' ? 'sandbox_capacity_unavailable' : undefined,
  );
}

async function readJson(req: IncomingMessage): Promise<Record<string, any>> {
  const raw = (await readBody(req)).toString('utf8');
  if (!raw.trim()) return {};
  try {
    const parsed = JSON.parse(raw);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // answered below
  }
  throw new ApiError(400, 'request body must be a JSON object');
}

/** NewSandbox (v1) / NewSandboxV2: the fields the fake honours; what it cannot honour is refused. */
function parseNewSandbox(version: 1 | 2, body: Record<string, any>): SandboxSpec {
  if (typeof body.templateID !== 'string' || !body.templateID) throw new ApiError(400, 'templateID is required');
  const metadata = stringMap(body.metadata, 'metadata');
  const envVars = stringMap(body.envVars, 'envVars');
  if (Array.isArray(body.volumeMounts) && body.volumeMounts.length)
    throw new ApiError(400, 'volume mounts are not supported by the E2B fake');
  if (body.autoResume?.enabled === true) throw new ApiError(400, 'autoResume is not supported by the E2B fake');
  return {
    templateId: body.templateID,
    metadata,
    envVars,
    timeoutS: timeoutField(body.timeout, version === 2 ? 300 : 15),
    autoPause: body.autoPause === true,
    // v2: every sandbox is secured; v1: only when asked.
    secure: version === 2 || body.secure === true,
    ...(typeof body.allow_internet_access === 'boolean' ? { allowInternetAccess: body.allow_internet_access } : {}),
  };
}

function stringMap(value: unknown, name: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    throw new ApiError(400, `${name} must be an object of strings`);
  }
  return { ...(value as Record<string, string>) };
}

/** Seconds (int32 in the API); `fallback` when absent, required when there is none. */
function timeoutField(value: unknown, fallback: number | undefined): number {
  if (value === undefined || value === null) {
    if (fallback === undefined) throw new ApiError(400, 'timeout is required');
    return fallback;
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 2 ** 31 - 1)
    throw new ApiError(400, 'timeout must be a non-negative integer (seconds)');
  return value;
}

/**
 * The list's `metadata` query: the SDK encodes each key and value with encodeURIComponent, joins
 * them with URLSearchParams, and openapi-fetch encodes that string once more as one query value
 * (e2b `SandboxPaginator.nextItems`). `url.searchParams` undid the last step.
 */
function parseMetadataFilter(raw: string | null): Record<string, string> {
  const filter: Record<string, string> = {};
  if (!raw) return filter;
  try {
    for (const [k, v] of new URLSearchParams(raw)) filter[decodeURIComponent(k)] = decodeURIComponent(v);
  } catch {
    throw new ApiError(400, `invalid metadata query ${JSON.stringify(raw)}`);
  }
  return filter;
}

type Cursor = [number, string];
const cursorOf = (s: FakeSandbox): Cursor => [s.startedAt.getTime(), s.sandboxId];
const compareCursor = (a: Cursor, b: Cursor): number => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
const encodeCursor = (c: Cursor): string => Buffer.from(JSON.stringify(c)).toString('base64url');

function decodeCursor(token: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(c) && typeof c[0] === 'number' && typeof c[1] === 'string') return [c[0], c[1]];
  } catch {
    // answered below
  }
  throw new ApiError(400, 'invalid nextToken');
}

/** Failures of background work (expiry, injected kills) surface as process warnings. */
function warn(what: string): (e: Error) => void {
  return (e) => process.emitWarning(`E2B fake: ${what} failed: ${e.message}`);
}

function zeroCounters(): Record<Counter, number> {
  return {
    creates: 0,
    connects: 0,
    lists: 0,
    infos: 0,
    kills: 0,
    setTimeouts: 0,
    pauses: 0,
    commands: 0,
    filesOps: 0,
    faultsServed: 0,
    expired: 0,
  };
}
