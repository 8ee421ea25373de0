/**
 * envd, the daemon inside every E2B sandbox, as the e2b SDK (2.51) talks to it through the
 * sandbox proxy: every request carries `E2b-Sandbox-Id` and `E2b-Sandbox-Port: 49983` (e2b
 * `Sandbox` constructor, `sandboxHeaders`) and, for a secured sandbox, `X-Access-Token` (the
 * `envdAccessToken` of the create/connect answer).
 *
 * - `GET /health` → 204 (`Sandbox.isRunning`, `checkSandboxHealth`: 502 there means "killed").
 * - `GET /files?path=&username=` → the bytes (`Filesystem.read`); `POST /files` → multipart
 *   (`file` parts, the filename is the path when `path` is absent) or `application/octet-stream`
 *   (optionally `Content-Encoding: gzip`) with `X-Metadata-<key>` headers (`Filesystem.write`);
 *   answers `[{name, type: "file", path}]`. Presigned URLs (`signature`, `signature_expiration`,
 *   e2b `getSignature`) stand in for the access token on /files.
 * - Connect RPC (see connect-protocol.ts): `process.Process/{Start,Connect,List,SendInput,
 *   SendSignal,CloseStdin}` and `filesystem.Filesystem/{Stat,MakeDir,Move,ListDir,Remove}`; the
 *   user is `Authorization: Basic base64("<user>:")` (e2b `authenticationHeader`).
 *
 * A request for a sandbox that does not run gets the proxy's answer, 502
 * `{"sandboxId", "message": "The sandbox was not found", "code": 502}`: the SDK reads it as a
 * dead sandbox (RPC: connect `unavailable`; HTTP: `TimeoutError`; health: not running).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import {
  parseStreamRequest,
  parseTimeoutMs,
  parseUnaryRequest,
  readBody,
  RpcError,
  sendUnary,
  sendUnaryError,
  ServerStream,
  CONTENT_TYPE_STREAM,
} from './connect-protocol';
import type { FakeSandbox } from './fake-sandbox';
import { FsError, HOME } from './sandbox-files';
import {
  DEFAULT_PATH,
  SandboxProcess,
  type ProcessConfigJson,
  type ProcessEventJson,
  type StartSpec,
} from './sandbox-process';

export const ENVD_PORT = 49983;

export type FaultStatus = 401 | 429 | 500 | 502 | 503;
export interface Fault {
  status: FaultStatus;
  retryAfterSec?: number;
  message?: string;
}

/** What envd needs from the fake around it: faults, counters, and killing a sandbox. */
export interface EnvdHooks {
  takeFault(op: 'command' | 'files'): Fault | undefined;
  count(op: 'command' | 'files'): void;
  /** Armed by `killSandboxDuringNextCommand`, consumed by the next `Start`. */
  takeKillDuringCommand(): { afterMs: number } | undefined;
  /** Armed by `dropNextStream`, consumed by the next `Start` or `Connect`. */
  takeDropStream(): boolean;
  killSandbox(sandbox: FakeSandbox): Promise<void>;
}

/** The sandbox proxy's answer for a sandbox that is not running (or a port nothing listens on). */
export function sandboxNotFound(res: ServerResponse, sandboxId: string, message = 'The sandbox was not found'): void {
  json(res, 502, { sandboxId, message, code: 502 });
}

export async function handleEnvd(
  hooks: EnvdHooks,
  sandbox: FakeSandbox,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://envd');
  if (url.pathname === '/health' && req.method === 'GET') return void res.writeHead(204).end();
  const signed = url.pathname === '/files' && signatureValid(sandbox, url, req.method === 'GET' ? 'read' : 'write');
  if (sandbox.envdAccessToken && !signed && !tokenMatches(req.headers['x-access-token'], sandbox.envdAccessToken)) {
    return json(res, 401, {
      code: 401,
      message: 'unauthorized access, please provide a valid access token or method signing if supported',
    });
  }
  if (url.pathname === '/envs' && req.method === 'GET') return json(res, 200, sandbox.spec.envVars);
  if (url.pathname === '/files') return handleFiles(hooks, sandbox, url, req, res);
  const rpc = /^\/(process\.Process|filesystem\.Filesystem)\/([A-Za-z]+)$/.exec(url.pathname);
  if (rpc && req.method === 'POST') return handleRpc(hooks, sandbox, `${rpc[1]}/${rpc[2]}`, req, res);
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
}

// ---------------------------------------------------------------------------------------------
// /files

async function handleFiles(
  hooks: EnvdHooks,
  sandbox: FakeSandbox,
  url: URL,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'POST')
    return json(res, 405, { code: 405, message: `method ${req.method} not allowed` });
  hooks.count('files');
  const fault = hooks.takeFault('files');
  if (fault) return httpFault(res, sandbox, fault);
  const user = url.searchParams.get('username') || undefined;
  if (!knownUser(user))
    return json(res, 401, { code: 401, message: `error looking up user '${user}': user: unknown user ${user}` });
  try {
    if (req.method === 'GET') await download(sandbox, url, req, res);
    else await upload(sandbox, url, req, res);
  } catch (e) {
    if (res.headersSent) return void res.destroy();
    if (e instanceof FsError) {
      // envd: 404 for a missing path, 400 for an invalid one, 500 for the rest (permission denied included).
      const status = e.kind === 'not_found' ? 404 : e.kind === 'invalid' ? 400 : 500;
      return json(res, status, { code: status, message: e.message });
    }
    json(res, 500, { code: 500, message: (e as Error).message });
  }
}

async function download(sandbox: FakeSandbox, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const file = await sandbox.files.read(url.searchParams.get('path') ?? '');
  // envd serves gzip when asked ("supported: [identity, gzip]"); fetch undoes it transparently.
  const gzip = file.size > 0 && acceptsGzip(req.headers['accept-encoding']);
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-disposition': `attachment; filename=${JSON.stringify(path.posix.basename(file.path))}`,
    ...(gzip ? { 'content-encoding': 'gzip', vary: 'Accept-Encoding' } : { 'content-length': file.size }),
  });
  if (gzip) await pipeline(file.stream, createGzip(), res);
  else await pipeline(file.stream, res);
}

async function upload(sandbox: FakeSandbox, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const metadata = metadataHeaders(req);
  if (metadata instanceof Error) return json(res, 400, { code: 400, message: metadata.message });
  const queryPath = url.searchParams.get('path') || undefined;
  const contentType = req.headers['content-type'] ?? '';
  const written = [];
  if (contentType.startsWith('multipart/form-data')) {
    const form = await new Response(await readBody(req), { headers: { 'content-type': contentType } }).formData();
    const files = form.getAll('file').filter((f): f is File => typeof f !== 'string');
    if (!files.length) return json(res, 400, { code: 400, message: 'no file in the multipart request' });
    if (queryPath && files.length > 1)
      return json(res, 400, { code: 400, message: 'path can only be used with a single file' });
    for (const file of files) {
      const target = queryPath ?? file.name;
      if (!target)
        return json(res, 400, {
          code: 400,
          message: 'path is required: neither the path parameter nor a filename was given',
        });
      written.push(await sandbox.files.write(target, Buffer.from(await file.arrayBuffer()), metadata));
    }
  } else {
    if (!queryPath)
      return json(res, 400, { code: 400, message: 'path is required for an application/octet-stream upload' });
    const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && encoding !== 'gzip')
      return json(res, 400, { code: 400, message: `unsupported Content-Encoding ${encoding}` });
    let source: Readable = req;
    if (encoding === 'gzip') {
      const gunzip = createGunzip();
      pipeline(req, gunzip).catch((e: Error) => gunzip.destroy(e));
      source = gunzip;
    }
    written.push(await sandbox.files.write(queryPath, source, metadata));
  }
  json(res, 200, written);
}

/** `X-Metadata-<key>: <value>` request headers: keys lowercased, both printable US-ASCII. */
function metadataHeaders(req: IncomingMessage): Record<string, string> | Error | undefined {
  const out: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (!/^x-metadata-/i.test(name)) continue;
    const key = name.slice('x-metadata-'.length).toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (!/^[\x20-\x7e]+$/.test(key) || !/^[\x20-\x7e]*$/.test(value))
      return new Error(`invalid metadata ${key}: keys and values must be printable US-ASCII`);
    if (!(key in out)) out[key] = value; // the first of repeated headers wins
  }
  return Object.keys(out).length ? out : undefined;
}

// ---------------------------------------------------------------------------------------------
// Connect RPC

async function handleRpc(
  hooks: EnvdHooks,
  sandbox: FakeSandbox,
  method: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const streaming =
    method === 'process.Process/Start' ||
    method === 'process.Process/Connect' ||
    method === 'filesystem.Filesystem/WatchDir';
  const contentType = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  const expected = streaming ? CONTENT_TYPE_STREAM : 'application/json';
  if (contentType !== expected) {
    // connect-go answers 415 for an encoding it does not serve; this fake serves only JSON.
    return void res.writeHead(415, { 'accept-post': expected }).end();
  }
  const body = await readBody(req);
  try {
    const user = basicUser(req.headers.authorization);
    if (!knownUser(user))
      throw new RpcError('unauthenticated', `error looking up user '${user}': user: unknown user ${user}`);
    switch (method) {
      case 'process.Process/Start':
        return await startProcess(hooks, sandbox, parseStreamRequest(body) as StartRequestJson, req, res);
      case 'process.Process/Connect':
        return connectProcess(hooks, sandbox, parseStreamRequest(body) as { process?: SelectorJson }, req, res);
      case 'filesystem.Filesystem/WatchDir':
        throw new RpcError('unimplemented', 'filesystem.Filesystem/WatchDir is not implemented by the E2B fake');
    }
    const request = parseUnaryRequest(body) as Record<string, any>;
    if (method.startsWith('filesystem.')) {
      hooks.count('files');
      const fault = hooks.takeFault('files');
      if (fault?.status === 502) return sandboxNotFound(res, sandbox.sandboxId);
      if (fault) throw faultRpcError(fault);
    }
    sendUnary(res, await unary(sandbox, method, request));
  } catch (e) {
    const error =
      e instanceof RpcError ? e : e instanceof FsError ? fsRpcError(e) : new RpcError('internal', (e as Error).message);
    if (res.headersSent) return void res.destroy();
    // A streaming call fails like connect-go fails it: 200 and an end-of-stream error.
    if (streaming) return void new ServerStream(res).end(error);
    sendUnaryError(res, error);
  }
}

async function unary(sandbox: FakeSandbox, method: string, request: Record<string, any>): Promise<unknown> {
  switch (method) {
    case 'process.Process/List':
      return {
        processes: [...sandbox.processes.values()]
          .filter((p) => p.running)
          .map((p) => ({ config: p.config, pid: p.pid, ...(p.tag !== undefined ? { tag: p.tag } : {}) })),
      };
    case 'process.Process/SendSignal': {
      const proc = findProcess(sandbox, request.process);
      const signal = SIGNALS[String(request.signal)];
      if (!signal) throw new RpcError('invalid_argument', `invalid signal: ${request.signal}`);
      proc.signal(signal);
      return {};
    }
    case 'process.Process/SendInput': {
      const proc = findProcess(sandbox, request.process);
      if (request.input?.pty !== undefined) throw new RpcError('failed_precondition', 'the process has no PTY');
      if (!proc.stdinOpen)
        throw new RpcError('failed_precondition', 'stdin is not enabled or already closed for this process');
      await proc.writeStdin(Buffer.from(String(request.input?.stdin ?? ''), 'base64'));
      return {};
    }
    case 'process.Process/CloseStdin':
      findProcess(sandbox, request.process).closeStdin();
      return {};
    case 'filesystem.Filesystem/Stat':
      return { entry: await sandbox.files.stat(stringField(request, 'path')) };
    case 'filesystem.Filesystem/MakeDir':
      return { entry: await sandbox.files.makeDir(stringField(request, 'path')) };
    case 'filesystem.Filesystem/Move':
      return { entry: await sandbox.files.move(stringField(request, 'source'), stringField(request, 'destination')) };
    case 'filesystem.Filesystem/ListDir':
      return { entries: await sandbox.files.list(stringField(request, 'path'), Number(request.depth ?? 1) || 1) };
    case 'filesystem.Filesystem/Remove':
      await sandbox.files.remove(stringField(request, 'path'));
      return {};
  }
  throw new RpcError('unimplemented', `${method} is not implemented by the E2B fake`);
}

interface SelectorJson {
  pid?: number;
  tag?: string;
}

interface StartRequestJson {
  process?: Partial<ProcessConfigJson>;
  pty?: unknown;
  tag?: string;
  stdin?: boolean;
}

/** SendSignal's `signal` in proto3 JSON: the enum name (or its number). */
const SIGNALS: Record<string, NodeJS.Signals> = {
  SIGNAL_SIGKILL: 'SIGKILL',
  '9': 'SIGKILL',
  SIGNAL_SIGTERM: 'SIGTERM',
  '15': 'SIGTERM',
};

async function startProcess(
  hooks: EnvdHooks,
  sandbox: FakeSandbox,
  request: StartRequestJson,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  hooks.count('command');
  const fault = hooks.takeFault('command');
  if (fault?.status === 502) return sandboxNotFound(res, sandbox.sandboxId);
  const stream = new ServerStream(res);
  sandbox.trackStream(stream);
  if (fault) return stream.end(faultRpcError(fault));
  if (request.pty !== undefined)
    return stream.end(new RpcError('unimplemented', 'PTY processes are not implemented by the E2B fake'));
  const config = request.process;
  if (!config || typeof config.cmd !== 'string' || !config.cmd)
    return stream.end(new RpcError('invalid_argument', 'process.cmd is required'));
  if (config.cmd.includes('='))
    return stream.end(
      new RpcError('invalid_argument', `the E2B fake cannot run a program whose path contains '=': ${config.cmd}`),
    );
  const cwd = path.posix.resolve(HOME, config.cwd ?? HOME);
  const resolvedCwd = await sandbox.files.resolve(cwd).catch((e: Error) => e);
  if (resolvedCwd instanceof Error)
    return stream.end(
      resolvedCwd instanceof FsError ? fsRpcError(resolvedCwd) : new RpcError('internal', resolvedCwd.message),
    );
  if (resolvedCwd.host) {
    const isDir = await stat(resolvedCwd.host).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir)
      return stream.end(new RpcError('internal', `error starting process: chdir ${cwd}: no such file or directory`));
  }
  // The command's environment: PATH and HOME, the sandbox's envVars, then the command's envs.
  const envs = { ...(config.envs ?? {}) };
  const env = { PATH: DEFAULT_PATH, HOME, ...sandbox.spec.envVars, ...envs };
  if (sandbox.plan.isolation === 'process' && env.HOME === HOME) env.HOME = sandbox.plan.homeHost;
  const spec: StartSpec = {
    pid: sandbox.allocatePid(),
    config: {
      cmd: config.cmd,
      args: (config.args ?? []).map(String),
      envs,
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
    },
    ...(request.tag !== undefined ? { tag: request.tag } : {}),
    env,
    cwd,
    ...(resolvedCwd.host ? { hostCwd: resolvedCwd.host } : {}),
    stdin: request.stdin === true,
  };
  const kill = hooks.takeKillDuringCommand();
  const relay = new EventRelay(stream, { drop: hooks.takeDropStream(), hold: kill !== undefined });
  let proc: SandboxProcess;
  try {
    proc = await SandboxProcess.start(sandbox.plan, spec, relay.listener);
  } catch (e) {
    return stream.end(new RpcError('internal', `error starting process: ${(e as Error).message}`));
  }
  if (!sandbox.running) {
    // The sandbox went away while the process was starting: it goes with it.
    proc.signal('SIGKILL');
    return void stream.destroy();
  }
  sandbox.processes.set(proc.pid, proc);
  void proc.done.then(() => sandbox.processes.delete(proc.pid));
  relay.start(proc.pid);
  follow(proc, stream, relay, req, true);
  if (kill) {
    // The sandbox dies while the command runs: once the start event is on the wire, after afterMs.
    // The relay holds every later event, so the client never sees the command finish.
    void relay
      .flushed()
      .then(() =>
        setTimeout(
          () =>
            void hooks
              .killSandbox(sandbox)
              .catch((e: Error) =>
                process.emitWarning(`E2B fake: killing sandbox ${sandbox.sandboxId} failed: ${e.message}`),
              ),
          kill.afterMs,
        ),
      );
  }
}

function connectProcess(
  hooks: EnvdHooks,
  sandbox: FakeSandbox,
  request: { process?: SelectorJson },
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const stream = new ServerStream(res);
  sandbox.trackStream(stream);
  let proc: SandboxProcess;
  try {
    proc = findProcess(sandbox, request.process);
  } catch (e) {
    void stream.end(e as RpcError);
    return;
  }
  const relay = new EventRelay(stream, { drop: hooks.takeDropStream(), hold: false });
  relay.start(proc.pid);
  if (proc.result) return relay.listener({ end: proc.result });
  proc.subscribe(relay.listener);
  follow(proc, stream, relay, req, false);
}

/**
 * The rest of a process stream: the client's deadline and envd's keepalive pings. For `Start`
 * the deadline is the process's own (envd runs it under a context with the `Connect-Timeout-Ms`
 * timeout, detached from the request): it kills the process even after the client went away,
 * while a client that just disconnects leaves the process running. For `Connect` it ends only the
 * stream.
 */
function follow(
  proc: SandboxProcess,
  stream: ServerStream,
  relay: EventRelay,
  req: IncomingMessage,
  killOnDeadline: boolean,
): void {
  const timeoutMs = parseTimeoutMs(req.headers['connect-timeout-ms']);
  const deadline =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          if (killOnDeadline) proc.signal('SIGKILL');
          void stream.end(new RpcError('deadline_exceeded', 'context deadline exceeded'));
        }, timeoutMs);
  // `Keepalive-Ping-Interval` (seconds; the SDK sends 50): envd sends a keepalive event that often.
  const pingS = Number(req.headers['keepalive-ping-interval']);
  const keepalive =
    pingS > 0 ? setInterval(() => void stream.send({ event: { keepalive: {} } }), pingS * 1000) : undefined;
  deadline?.unref();
  keepalive?.unref();
  void proc.done.then(() => clearTimeout(deadline));
  stream.onClose(() => {
    if (!killOnDeadline) clearTimeout(deadline);
    clearInterval(keepalive);
    proc.unsubscribe(relay.listener);
  });
}

/**
 * Process events onto a stream: `start` first (events that come earlier wait), `end` closes the
 * stream with an empty end-of-stream message. `drop` cuts the connection instead of sending the
 * first event after `start`; `hold` swallows everything after `start` (the sandbox is about to die).
 */
class EventRelay {
  private started = false;
  private readonly early: ProcessEventJson[] = [];
  private startSent: Promise<void> = Promise.resolve();

  constructor(
    private readonly stream: ServerStream,
    private readonly o: { drop: boolean; hold: boolean },
  ) {}

  readonly listener = (event: ProcessEventJson): void => {
    if (this.started) this.forward(event);
    else this.early.push(event);
  };

  start(pid: number): void {
    this.startSent = this.stream.send({ event: { start: { pid } } });
    this.started = true;
    for (const event of this.early.splice(0)) this.forward(event);
  }

  flushed(): Promise<void> {
    return this.startSent;
  }

  private forward(event: ProcessEventJson): void {
    if (this.stream.closed || this.o.hold) return;
    if (this.o.drop) return void this.stream.destroy();
    void this.stream.send({ event });
    if ('end' in event) void this.stream.end();
  }
}

function findProcess(sandbox: FakeSandbox, selector: SelectorJson | undefined): SandboxProcess {
  if (selector?.pid !== undefined) {
    const proc = sandbox.processes.get(Number(selector.pid));
    if (proc?.running) return proc;
    throw new RpcError('not_found', `process with pid ${selector.pid} not found`);
  }
  if (selector?.tag !== undefined) {
    const proc = [...sandbox.processes.values()].find((p) => p.tag === selector.tag && p.running);
    if (proc) return proc;
    throw new RpcError('not_found', `process with tag ${selector.tag} not found`);
  }
  throw new RpcError('invalid_argument', 'process selector (pid or tag) is required');
}

// ---------------------------------------------------------------------------------------------
// helpers

function stringField(request: Record<string, any>, name: string): string {
  const value = request[name];
  if (typeof value !== 'string') throw new RpcError('invalid_argument', `${name} is required`);
  return value;
}

function fsRpcError(e: FsError): RpcError {
  const code = (
    {
      not_found: 'not_found',
      invalid: 'invalid_argument',
      permission: 'permission_denied',
      exists: 'already_exists',
    } as const
  )[e.kind];
  return new RpcError(code, e.message);
}

/** An injected fault as an RPC error (502 is answered by the proxy, before envd: see callers). */
function faultRpcError(fault: Fault): RpcError {
  const code = (
    {
      401: 'unauthenticated',
      429: 'resource_exhausted',
      500: 'internal',
      502: 'unavailable',
      503: 'unavailable',
    } as const
  )[fault.status];
  return new RpcError(code, fault.message ?? `injected fault (${fault.status})`);
}

function httpFault(res: ServerResponse, sandbox: FakeSandbox, fault: Fault): void {
  if (fault.status === 502) return sandboxNotFound(res, sandbox.sandboxId);
  const headers: Record<string, string> =
    fault.status === 429 && fault.retryAfterSec !== undefined ? { 'retry-after': String(fault.retryAfterSec) } : {};
  json(
    res,
    fault.status,
    { code: fault.status, message: fault.message ?? `injected fault (${fault.status})` },
    headers,
  );
}

/** The user of an envd RPC: `Authorization: Basic base64("<user>:")`, absent for the default user. */
function basicUser(header: string | undefined): string | undefined {
  const m = /^Basic\s+(.+)$/i.exec(header ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  return decoded.slice(0, decoded.indexOf(':') >= 0 ? decoded.indexOf(':') : undefined) || undefined;
}

/** The template's users. Both run as the fake's one unprivileged uid: there is no real root. */
function knownUser(user: string | undefined): boolean {
  return user === undefined || user === 'user' || user === 'root';
}

function tokenMatches(given: string | string[] | undefined, token: string): boolean {
  const value = Array.isArray(given) ? given[0] : given;
  return (
    value !== undefined && value.length === token.length && timingSafeEqual(Buffer.from(value), Buffer.from(token))
  );
}

/**
 * A presigned /files URL: `v1_` + unpadded base64 SHA-256 of
 * `path:operation:user:token[:expiration]` (e2b `getSignature`).
 */
function signatureValid(sandbox: FakeSandbox, url: URL, operation: 'read' | 'write'): boolean {
  const signature = url.searchParams.get('signature');
  if (!signature || !sandbox.envdAccessToken) return false;
  const expiration = url.searchParams.get('signature_expiration');
  if (expiration && Number(expiration) < Date.now() / 1000) return false;
  const parts = [
    url.searchParams.get('path') ?? '',
    operation,
    url.searchParams.get('username') ?? '',
    sandbox.envdAccessToken,
    ...(expiration ? [expiration] : []),
  ];
  const want = `v1_${createHash('sha256').update(parts.join(':')).digest('base64').replace(/=+$/, '')}`;
  return signature.length === want.length && timingSafeEqual(Buffer.from(signature), Buffer.from(want));
}

function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return name!.trim().toLowerCase() === 'gzip' && (q === undefined || Number(q.slice(2)) > 0);
  });
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = Buffer.from(JSON.stringify(body));
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': payload.length, ...headers })
    .end(payload);
}
