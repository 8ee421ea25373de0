/**
 * A local Modal, for tests and `npm start` without a Modal account: a gRPC server built from the
 * service definitions inside the pinned `modal` SDK (see modal-protocol.ts), implementing exactly
 * the RPCs the SDK calls for what Toolplane uses — auth token, environment and app lookup, image
 * get-or-create and build status, ephemeral secrets, sandbox create / task id / wait / terminate /
 * list by tags / tags, command-router access — and, on the same port, the task command router:
 * exec start, stdin (unary and streamed, with offsets), stdout/stderr reads from an offset, poll and
 * wait. The unmodified SDK reaches it with `MODAL_SERVER_URL=http://127.0.0.1:<port>`; the router
 * URL it hands out is `https://127.0.0.1:<port>` (the SDK speaks plaintext to a localhost router).
 *
 * Each exec runs locally inside the local runner's one-shot bubblewrap isolation (SandboxProcess of
 * the E2B fake: own namespaces, no network, seccomp, an unprivileged uid), with the sandbox's own
 * /root and /tmp, and the SDK's filesystem helper at /__modal/.bin/modal-sandbox-fs-tools.
 * Images: `RUN` lines of a Dockerfile-style image are run at build time, the same way, with /opt
 * writable: what they leave under /opt is the image (a venv made there is the image's Python),
 * bound read-only into its sandboxes; a built image is found again by its definition.
 *
 * Latencies (create, schedule, build) and faults (auth error, resource exhaustion, sandbox
 * terminated mid-exec, stdio streams dropped) are settable while it runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createServer, ServerError, Status, type CallContext, type Server } from 'nice-grpc';
import { prepareSupportDir, seccompProgram, SUPPORT_MOUNT } from '@toolplane/sandbox';
import { SandboxProcess, type EndEventJson, type ProcessEventJson, type SpawnPlan } from '../e2b/sandbox-process';
import { modalProtocol, type ServiceDefinition } from './modal-protocol';

export const FS_TOOLS_PATH = '/__modal/.bin/modal-sandbox-fs-tools';
const FS_TOOLS_HOST = path.join(__dirname, 'fs-tools.py');
/** What an image build keeps: everything its RUN lines wrote under /opt (the rest of the root is the host's /usr, read-only). */
const IMAGE_MOUNT = '/opt';
const PATH_IN_SANDBOX = '/usr/local/bin:/usr/bin:/bin';

export interface ModalFakeOptions {
  port?: number;
  host?: string;
  /** Accepted token pairs; none given ⇒ any non-empty pair is accepted. */
  tokens?: Array<{ id: string; secret: string }>;
  /** How long SandboxCreate takes to answer (the bench uses 2700). */
  createLatencyMs?: number;
  /** How long after create a sandbox gets its task (SandboxGetTaskId answers nothing before). */
  scheduleLatencyMs?: number;
  isolation?: 'bwrap' | 'process';
  bwrapPath?: string;
  /** Host paths every command sees read-only at the same path (a local wheelhouse). */
  readable?: string[];
  workRoot?: string;
  runAs?: { uid: number; gid: number };
}

export interface ModalFaults {
  /** Every control-plane call answers UNAUTHENTICATED. */
  auth?: boolean;
  /** SandboxCreate answers RESOURCE_EXHAUSTED. */
  resourceExhausted?: boolean;
  /** The sandbox running an exec is terminated this many ms after the exec starts. */
  terminateMidExecMs?: number;
  /** Every exec stdio stream fails with UNAVAILABLE after its first message. */
  dropStreams?: boolean;
}

interface Exec {
  id: string;
  process: SandboxProcess;
  out: [Buffer[], Buffer[]];
  outLen: [number, number];
  stdinWritten: number;
  stdinClosed: boolean;
  end?: { code?: number; signal?: number };
  changed: Set<() => void>;
  timedOutOrKilled?: boolean;
  /** When TaskExecStart came in, when its process started (after the sandbox was scheduled), when it ended (ms since the epoch). */
  requestedAt: number;
  startedAt: number;
  endedAt?: number;
  command: string;
}

interface FakeSandbox {
  id: string;
  appId: string;
  tokenId: string;
  taskId?: string;
  scheduled?: boolean;
  scheduledAt?: number;
  imageId: string;
  tags: Map<string, string>;
  env: Record<string, string>;
  createdAt: number;
  timeoutSecs: number;
  networkBlocked: boolean;
  milliCpu: number;
  memoryMb: number;
  dir: string;
  plan: SpawnPlan;
  execs: Map<string, Exec>;
  execCount: number;
  /** Execs running now, and the most that ever ran at once. */
  running: number;
  maxRunning: number;
  result?: { status: number; exitcode: number; exception: string };
  changed: Set<() => void>;
  timers: NodeJS.Timeout[];
}

interface FakeImage {
  id: string;
  commands: string[];
  dir?: string;
  result?: { status: number; exception: string };
  done: Promise<void>;
}

export interface ModalFakeStats {
  creates: number;
  /** Stdio streams cut by the dropStreams fault. */
  streamDrops: number;
  imageBuilds: number;
  sandboxes: Array<{
    id: string;
    appId: string;
    tokenId: string;
    running: boolean;
    tags: Record<string, string>;
    imageId: string;
    networkBlocked: boolean;
    milliCpu: number;
    memoryMb: number;
    execs: number;
    maxConcurrentExecs: number;
    /** When it got its task (a sandbox runs nothing before), ms since the epoch. */
    scheduledAt?: number;
    /** Its execs in the order they were asked for: the command (first 300 characters), when it was asked for, started, ended. */
    execLog: Array<{ command: string; requestedAt: number; startedAt: number; endedAt?: number }>;
  }>;
}

/** GenericResult statuses. */
const SUCCESS = 1;
const FAILURE = 2;
const TERMINATED = 3;
const TIMEOUT = 4;

export class ModalFake {
  serverUrl = '';
  routerUrl = '';
  faults: ModalFaults = {};
  createLatencyMs: number;
  scheduleLatencyMs: number;
  private server?: Server;
  private workDir = '';
  private basePlan?: Omit<SpawnPlan, 'homeHost' | 'tmpHost'>;
  private readonly sandboxes = new Map<string, FakeSandbox>();
  private readonly byTask = new Map<string, FakeSandbox>();
  private readonly images = new Map<string, FakeImage>();
  private readonly imagesById = new Map<string, FakeImage>();
  private readonly apps = new Map<string, string>();
  private readonly secrets = new Map<string, Record<string, string>>();
  private readonly jwts = new Map<string, string>();
  private creates = 0;
  private streamDrops = 0;
  private imageBuilds = 0;
  private lastCreatedAt = 0;

  constructor(private readonly o: ModalFakeOptions = {}) {
    this.createLatencyMs = o.createLatencyMs ?? 0;
    this.scheduleLatencyMs = o.scheduleLatencyMs ?? 0;
  }

  async start(): Promise<this> {
    const isolation = this.o.isolation ?? 'bwrap';
    const bwrapPath = this.o.bwrapPath ?? '/usr/bin/bwrap';
    if (isolation === 'bwrap' && !existsSync(bwrapPath))
      throw new Error(
        `Modal fake: bubblewrap is not at ${bwrapPath}: install it (apt-get install bubblewrap) or start the fake with isolation 'process'`,
      );
    const root = process.getuid?.() === 0;
    const runAs = this.o.runAs ?? (root ? { uid: 65534, gid: 65534 } : undefined);
    this.workDir = path.join(
      this.o.workRoot ?? os.tmpdir(),
      `tp-modal-fake-${process.pid}-${randomBytes(4).toString('hex')}`,
    );
    await fs.mkdir(this.workDir, { recursive: true, mode: 0o711 });
    const supportDir =
      isolation === 'bwrap'
        ? await prepareSupportDir(this.workDir, seccompProgram(), runAs?.uid ?? 65534, runAs?.gid ?? 65534)
        : undefined;
    const fsTools = path.join(this.workDir, 'modal-sandbox-fs-tools');
    await fs.copyFile(FS_TOOLS_HOST, fsTools);
    await fs.chmod(fsTools, 0o755);
    this.basePlan = {
      isolation,
      bwrapPath,
      ...(supportDir ? { supportDir } : {}),
      ...(runAs ? { runAs } : {}),
      readable: [...(this.o.readable ?? [])],
      homeAt: '/root',
      extraBinds: ['--ro-bind', fsTools, FS_TOOLS_PATH],
    };
    const { ModalClientDefinition, TaskCommandRouterDefinition } = modalProtocol();
    const server = createServer({
      'grpc.max_receive_message_length': 100 * 1024 * 1024,
      'grpc.max_send_message_length': 100 * 1024 * 1024,
    });
    server.add(ModalClientDefinition as never, this.serve(ModalClientDefinition, this.controlPlane(), true) as never);
    server.add(
      TaskCommandRouterDefinition as never,
      this.serve(TaskCommandRouterDefinition, this.router(), false) as never,
    );
    const host = this.o.host ?? '127.0.0.1';
    const port = await server.listen(`${host}:${this.o.port ?? 0}`);
    this.server = server;
    this.serverUrl = `http://${host}:${port}`;
    this.routerUrl = `https://${host}:${port}`;
    return this;
  }

  stats(): ModalFakeStats {
    return {
      creates: this.creates,
      streamDrops: this.streamDrops,
      imageBuilds: this.imageBuilds,
      sandboxes: [...this.sandboxes.values()].map((s) => ({
        id: s.id,
        appId: s.appId,
        tokenId: s.tokenId,
        running: !s.result,
        tags: Object.fromEntries(s.tags),
        imageId: s.imageId,
        networkBlocked: s.networkBlocked,
        milliCpu: s.milliCpu,
        memoryMb: s.memoryMb,
        execs: s.execCount,
        maxConcurrentExecs: s.maxRunning,
        ...(s.scheduledAt ? { scheduledAt: s.scheduledAt } : {}),
        execLog: [...s.execs.values()].map((e) => ({
          command: e.command,
          requestedAt: e.requestedAt,
          startedAt: e.startedAt,
          ...(e.endedAt ? { endedAt: e.endedAt } : {}),
        })),
      })),
    };
  }

  /** Terminates a sandbox from outside (as Modal may): its execs die, its files go. */
  async terminate(sandboxId: string, status = TERMINATED, exception = 'Sandbox terminated'): Promise<void> {
    const s = this.sandboxes.get(sandboxId);
    if (!s || s.result) return;
    s.result = { status, exitcode: status === TERMINATED ? 137 : 0, exception };
    for (const t of s.timers) clearTimeout(t);
    for (const e of s.execs.values()) e.process.signal('SIGKILL');
    await Promise.all([...s.execs.values()].map((e) => e.process.done));
    notify(s.changed);
    await fs.rm(s.dir, { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.sandboxes.keys()].map((id) => this.terminate(id)));
    this.server?.forceShutdown();
    await fs.rm(this.workDir, { recursive: true, force: true });
  }

  // ---------------------------------------------------------------- control plane

  private controlPlane(): Record<string, Handler> {
    const cp: Record<string, Handler> = {
      authTokenGet: async () => ({ token: this.jwt({ kind: 'auth' }) }),
      environmentGetOrCreate: async (r: { deploymentName: string }) => ({
        environmentId: 'en-fake',
        metadata: { name: r.deploymentName || 'main', settings: { imageBuilderVersion: '2025.06', webhookSuffix: '' } },
      }),
      appGetOrCreate: async (r: { appName: string; environmentName: string; objectCreationType: number }, ctx) => {
        const key = `${tokenOf(ctx)}/${r.environmentName}/${r.appName}`;
        let id = this.apps.get(key);
        if (!id) {
          if (r.objectCreationType !== 1) throw new ServerError(Status.NOT_FOUND, `App '${r.appName}' not found`);
          id = `ap-${randomBytes(11).toString('hex')}`;
          this.apps.set(key, id);
        }
        return { appId: id };
      },
      secretGetOrCreate: async (r: { envDict: Record<string, string>; objectCreationType: number }) => {
        if (r.objectCreationType !== 5)
          throw new ServerError(Status.FAILED_PRECONDITION, 'the Modal fake only makes ephemeral secrets');
        const id = `st-${randomBytes(11).toString('hex')}`;
        this.secrets.set(id, { ...r.envDict });
        return { secretId: id };
      },
      imageGetOrCreate: async (r: {
        image?: { dockerfileCommands: string[]; baseImages: Array<{ imageId: string }> };
        forceBuild: boolean;
      }) => this.imageGetOrCreate(r),
      imageJoinStreaming: async function* (this: ModalFake, r: { imageId: string; timeout: number }, ctx: CallContext) {
        const image = this.imagesById.get(r.imageId);
        if (!image) throw new ServerError(Status.NOT_FOUND, `Image ${r.imageId} not found`);
        await Promise.race([image.done, sleep(Math.max(1, r.timeout) * 1000, ctx.signal)]);
        yield image.result ? { result: image.result, entryId: '1', eof: true } : { entryId: '0' };
      }.bind(this),
      sandboxCreate: async (r: SandboxCreateRequest, ctx) => this.sandboxCreate(r, ctx, false),
      sandboxCreateV2: async (r: SandboxCreateRequest, ctx) => this.sandboxCreate(r, ctx, true),
      sandboxGetTaskId: async (r: { sandboxId: string }) => {
        const s = this.sandbox(r.sandboxId);
        if (s.result) return { taskResult: s.result };
        return s.taskId ? { taskId: s.taskId } : {};
      },
      sandboxGetCommandRouterAccess: async (r: { sandboxId?: string; taskId?: string }) => {
        const s = r.sandboxId ? this.sandbox(r.sandboxId) : this.byTask.get(r.taskId ?? '');
        if (!s?.taskId || s.result)
          throw new ServerError(Status.NOT_FOUND, `Sandbox ${r.sandboxId ?? r.taskId} is not running`);
        return { url: this.routerUrl, jwt: this.jwt({ kind: 'router', task_id: s.taskId }) };
      },
      taskGetCommandRouterAccess: async (r: { taskId: string }) => {
        const s = this.byTask.get(r.taskId);
        if (!s) throw new ServerError(Status.NOT_FOUND, `Task ${r.taskId} not found`);
        if (s.result) throw new ServerError(Status.NOT_FOUND, `Task ${r.taskId} has finished`);
        return { url: this.routerUrl, jwt: this.jwt({ kind: 'router', task_id: r.taskId }) };
      },
      sandboxWait: async (r: { sandboxId: string; timeout: number }, ctx) => {
        const s = this.sandbox(r.sandboxId);
        if (!s.result && r.timeout > 0) await waitFor(s.changed, () => !!s.result, r.timeout * 1000, ctx.signal);
        return s.result ? { result: s.result } : {};
      },
      sandboxTerminate: async (r: { sandboxId: string }) => {
        this.sandbox(r.sandboxId);
        await this.terminate(r.sandboxId);
        return {};
      },
      sandboxList: async (
        r: {
          appId: string;
          beforeTimestamp: number;
          includeFinished: boolean;
          tags: Array<{ tagName: string; tagValue: string }>;
        },
        ctx,
      ) => {
        const token = tokenOf(ctx);
        const found = [...this.sandboxes.values()]
          .filter((s) => s.tokenId === token && (!r.appId || s.appId === r.appId) && (r.includeFinished || !s.result))
          .filter((s) => !r.beforeTimestamp || s.createdAt < r.beforeTimestamp)
          .filter((s) => r.tags.every((t) => s.tags.get(t.tagName) === t.tagValue))
          .sort((a, b) => b.createdAt - a.createdAt)
          .slice(0, 100);
        return {
          sandboxes: found.map((s) => ({
            id: s.id,
            appId: s.appId,
            createdAt: s.createdAt,
            imageId: s.imageId,
            timeoutSecs: s.timeoutSecs,
            tags: [...s.tags].map(([tagName, tagValue]) => ({ tagName, tagValue })),
            taskInfo: s.taskId
              ? { id: s.taskId, startedAt: s.createdAt, ...(s.result ? { result: s.result } : {}) }
              : undefined,
          })),
        };
      },
      sandboxTagsGet: async (r: { sandboxId: string }) => ({
        tags: [...this.sandbox(r.sandboxId).tags].map(([tagName, tagValue]) => ({ tagName, tagValue })),
      }),
      sandboxTagsSet: async (r: { sandboxId: string; tags: Array<{ tagName: string; tagValue: string }> }) => {
        const s = this.sandbox(r.sandboxId);
        s.tags = new Map(r.tags.map((t) => [t.tagName, t.tagValue]));
        return {};
      },
    };
    for (const name of [
      'sandboxGetTaskId',
      'sandboxWait',
      'sandboxTerminate',
      'sandboxList',
      'sandboxTagsGet',
      'sandboxTagsSet',
    ])
      cp[`${name}V2`] = cp[name]!;
    return cp;
  }

  private imageGetOrCreate(r: {
    image?: { dockerfileCommands: string[]; baseImages: Array<{ imageId: string }> };
    forceBuild: boolean;
  }): { imageId: string; result?: FakeImage['result'] } {
    const commands = r.image?.dockerfileCommands ?? [];
    const base = r.image?.baseImages?.[0]?.imageId;
    const baseImage = base ? this.imagesById.get(base) : undefined;
    if (base && !baseImage) throw new ServerError(Status.NOT_FOUND, `Image ${base} not found`);
    const all = [...(baseImage?.commands ?? []), ...commands.filter((c) => !/^FROM base$/i.test(c))];
    const key = createHash('sha256').update(JSON.stringify(all)).digest('hex');
    const existing = this.images.get(key);
    if (existing && !r.forceBuild && existing.result?.status !== FAILURE)
      return { imageId: existing.id, ...(existing.result ? { result: existing.result } : {}) };
    const image: FakeImage = { id: `im-${key.slice(0, 22)}`, commands: all, done: Promise.resolve() };
    image.done = this.build(image);
    this.images.set(key, image);
    this.imagesById.set(image.id, image);
    return { imageId: image.id };
  }

  /** Runs the image's RUN lines in a one-shot sandbox with /opt/image writable; the dir is the image. */
  private async build(image: FakeImage): Promise<void> {
    this.imageBuilds++;
    const runs = image.commands.filter((c) => /^RUN\s/i.test(c)).map((c) => c.replace(/^RUN\s+/i, ''));
    if (runs.length === 0) {
      image.result = { status: SUCCESS, exception: '' };
      return;
    }
    const dir = path.join(this.workDir, `image-${image.id}`);
    const scratch = path.join(this.workDir, `build-${image.id}-${randomBytes(3).toString('hex')}`);
    try {
      await fs.rm(dir, { recursive: true, force: true });
      for (const d of [dir, path.join(scratch, 'root'), path.join(scratch, 'tmp')]) {
        await fs.mkdir(d, { recursive: true, mode: 0o755 });
        if (this.basePlan!.runAs) await fs.chown(d, this.basePlan!.runAs.uid, this.basePlan!.runAs.gid);
      }
      const plan: SpawnPlan = {
        ...this.basePlan!,
        homeHost: path.join(scratch, 'root'),
        tmpHost: path.join(scratch, 'tmp'),
        extraBinds: [...(this.basePlan!.extraBinds ?? []), '--bind', dir, IMAGE_MOUNT, ...this.supportBind()],
      };
      for (const run of runs) {
        const p = await SandboxProcess.start(plan, {
          pid: 1,
          config: { cmd: '/bin/sh', args: ['-c', run], envs: {} },
          env: { PATH: PATH_IN_SANDBOX, HOME: '/root' },
          cwd: '/root',
          stdin: false,
        });
        const chunks: Buffer[] = [];
        p.subscribe((ev) => {
          if ('data' in ev) chunks.push(Buffer.from('stderr' in ev.data ? ev.data.stderr : ev.data.stdout, 'base64'));
        });
        const end = await p.done;
        if (end.exitCode !== 0)
          throw new Error(`RUN ${run} failed (${end.status}):\n${Buffer.concat(chunks).toString('utf8').slice(-2000)}`);
      }
      image.dir = dir;
      image.result = { status: SUCCESS, exception: '' };
    } catch (e) {
      image.result = { status: FAILURE, exception: (e as Error).message };
    } finally {
      await fs.rm(scratch, { recursive: true, force: true });
    }
  }

  /**
   * V1 (`sb-` + 22 alphanumerics, the SDK then polls SandboxGetTaskId until scheduled) and V2 (any
   * other id; the task id and router access come back at once, and the task's first exec waits
   * until it is scheduled — create returns before the container runs).
   */
  private async sandboxCreate(
    r: SandboxCreateRequest,
    ctx: CallContext,
    v2: boolean,
  ): Promise<{ sandboxId: string; taskId?: string; commandRouterAccess?: { url: string; jwt: string } }> {
    if (this.faults.resourceExhausted)
      throw new ServerError(Status.RESOURCE_EXHAUSTED, 'Sandbox quota exceeded for this workspace');
    const def = r.definition;
    if (!def) throw new ServerError(Status.INVALID_ARGUMENT, 'definition is required');
    const image = this.imagesById.get(def.imageId);
    if (!image?.result || image.result.status !== SUCCESS)
      throw new ServerError(Status.FAILED_PRECONDITION, `Image ${def.imageId} is not built`);
    await sleep(this.createLatencyMs, ctx.signal);
    const env: Record<string, string> = {};
    for (const id of def.secretIds ?? []) Object.assign(env, this.secret(id));
    for (const src of r.secretSources ?? [])
      Object.assign(env, src.secretId ? this.secret(src.secretId) : (src.env?.contents ?? {}));
    const id = v2
      ? `sb-${randomBytes(8).toString('hex')}-${randomBytes(4).toString('hex')}`
      : `sb-${randomBytes(11).toString('hex')}`;
    const dir = path.join(this.workDir, `sbx-${id}`);
    await fs.mkdir(dir, { mode: 0o711 });
    for (const sub of ['root', 'tmp']) {
      await fs.mkdir(path.join(dir, sub), { mode: 0o700 });
      if (this.basePlan!.runAs) await fs.chown(path.join(dir, sub), this.basePlan!.runAs.uid, this.basePlan!.runAs.gid);
    }
    const imageBinds = image.dir ? ['--ro-bind', image.dir, IMAGE_MOUNT, ...this.supportBind()] : [];
    this.lastCreatedAt = Math.max(Date.now() / 1000, this.lastCreatedAt + 0.001);
    const s: FakeSandbox = {
      id,
      appId: r.appId,
      tokenId: tokenOf(ctx),
      imageId: image.id,
      tags: new Map((r.tags ?? []).map((t) => [t.tagName, t.tagValue])),
      env,
      createdAt: this.lastCreatedAt,
      timeoutSecs: def.timeoutSecs || 300,
      networkBlocked: def.networkAccess?.networkAccessType === 2 || !!def.blockNetwork,
      milliCpu: def.resources?.milliCpu ?? 0,
      memoryMb: def.resources?.memoryMb ?? 0,
      dir,
      plan: {
        ...this.basePlan!,
        homeHost: path.join(dir, 'root'),
        tmpHost: path.join(dir, 'tmp'),
        extraBinds: [...(this.basePlan!.extraBinds ?? []), ...imageBinds],
      },
      execs: new Map(),
      execCount: 0,
      running: 0,
      maxRunning: 0,
      changed: new Set(),
      timers: [],
    };
    this.sandboxes.set(id, s);
    this.creates++;
    const assignTask = () => {
      s.taskId = `ta-${randomBytes(11).toString('hex')}`;
      this.byTask.set(s.taskId, s);
    };
    if (v2) assignTask();
    const schedule = setTimeout(() => {
      if (s.result) return;
      if (!v2) assignTask();
      s.scheduled = true;
      s.scheduledAt = Date.now();
      notify(s.changed);
    }, this.scheduleLatencyMs);
    schedule.unref();
    const expire = setTimeout(() => void this.terminate(id, TIMEOUT, 'Sandbox timed out'), s.timeoutSecs * 1000);
    expire.unref();
    s.timers.push(schedule, expire);
    return v2
      ? {
          sandboxId: id,
          taskId: s.taskId,
          commandRouterAccess: { url: this.routerUrl, jwt: this.jwt({ kind: 'router', task_id: s.taskId! }) },
        }
      : { sandboxId: id };
  }

  // ---------------------------------------------------------------- task command router

  private router(): Record<string, Handler> {
    return {
      taskExecStart: async (r: ExecStartRequest, ctx) => {
        const requestedAt = Date.now();
        let s = this.task(r.taskId, ctx);
        await waitFor(s.changed, () => !!s.scheduled || !!s.result, 600_000, ctx.signal);
        s = this.task(r.taskId, ctx);
        if (s.execs.has(r.execId)) throw new ServerError(Status.ALREADY_EXISTS, `exec ${r.execId} already exists`);
        const env: Record<string, string> = { ...s.env };
        for (const id of r.secretIds ?? []) Object.assign(env, this.secret(id));
        for (const src of r.secretSources ?? [])
          Object.assign(env, src.secretId ? this.secret(src.secretId) : (src.env?.contents ?? {}));
        Object.assign(env, r.env ?? {});
        const [cmd, ...args] = r.commandArgs;
        if (!cmd) throw new ServerError(Status.INVALID_ARGUMENT, 'commandArgs is empty');
        const exec: Exec = {
          id: r.execId,
          process: undefined as never,
          out: [[], []],
          outLen: [0, 0],
          stdinWritten: 0,
          stdinClosed: false,
          changed: new Set(),
          requestedAt,
          startedAt: Date.now(),
          command: r.commandArgs.join(' ').slice(0, 300),
        };
        const keep = [r.stdoutConfig === 1, r.stderrConfig === 1];
        const onEvent = (ev: ProcessEventJson) => {
          if ('data' in ev) {
            const fd = 'stdout' in ev.data ? 0 : 1;
            if (!keep[fd]) return;
            const b = Buffer.from(
              fd === 0 ? (ev.data as { stdout: string }).stdout : (ev.data as { stderr: string }).stderr,
              'base64',
            );
            exec.out[fd].push(b);
            exec.outLen[fd] += b.length;
            notify(exec.changed);
          }
        };
        try {
          exec.process = await SandboxProcess.start(
            s.plan,
            {
              pid: ++s.execCount,
              config: { cmd, args, envs: env },
              env: { HOME: '/root', PATH: PATH_IN_SANDBOX, ...env },
              cwd: r.workdir || '/',
              stdin: true,
            },
            onEvent,
          );
        } catch (e) {
          throw new ServerError(Status.INVALID_ARGUMENT, `could not start ${cmd}: ${(e as Error).message}`);
        }
        s.execs.set(r.execId, exec);
        s.maxRunning = Math.max(s.maxRunning, ++s.running);
        void exec.process.done.then((end: EndEventJson) => {
          s.running--;
          exec.endedAt = Date.now();
          exec.end = end.exited ? { code: end.exitCode } : { signal: end.status.includes('terminated') ? 15 : 9 };
          notify(exec.changed);
        });
        if (r.timeoutSecs) s.timers.push(setTimeout(() => exec.process.signal('SIGKILL'), r.timeoutSecs * 1000));
        if (this.faults.terminateMidExecMs !== undefined)
          s.timers.push(setTimeout(() => void this.terminate(s.id), this.faults.terminateMidExecMs));
        return {};
      },
      taskExecStdioRead: async function* (
        this: ModalFake,
        r: { taskId: string; execId: string; offset: number; fileDescriptor: number },
        ctx: CallContext,
      ) {
        const { exec } = this.exec(r.taskId, r.execId, ctx);
        const fd = r.fileDescriptor === 1 ? 1 : 0;
        let offset = Number(r.offset);
        for (;;) {
          if (exec.outLen[fd] > offset) {
            const all = Buffer.concat(exec.out[fd]);
            exec.out[fd] = [all];
            const chunk = all.subarray(offset, offset + 1024 * 1024);
            offset += chunk.length;
            yield { data: chunk };
            if (this.faults.dropStreams) {
              this.streamDrops++;
              throw new ServerError(Status.UNAVAILABLE, 'stream dropped');
            }
            continue;
          }
          if (exec.end) return;
          await waitFor(exec.changed, () => exec.outLen[fd] > offset || !!exec.end, 30_000, ctx.signal);
          if (ctx.signal.aborted) return;
        }
      }.bind(this),
      taskExecStdinWrite: async (
        r: { taskId: string; execId: string; offset: number; data: Uint8Array; eof: boolean },
        ctx,
      ) => {
        const { exec } = this.exec(r.taskId, r.execId, ctx);
        await this.writeStdin(exec, Number(r.offset), Buffer.from(r.data), r.eof);
        return {};
      },
      taskExecStdinWriteStream: async (
        requests: AsyncIterable<{
          start?: { taskId: string; execId: string; offset: number };
          data?: Uint8Array;
          end?: object;
        }>,
        ctx,
      ) => {
        let exec: Exec | undefined;
        let offset = 0;
        for await (const m of requests) {
          if (m.start) {
            exec = this.exec(m.start.taskId, m.start.execId, ctx).exec;
            offset = Number(m.start.offset);
          } else if (!exec) {
            throw new ServerError(Status.INVALID_ARGUMENT, 'the first message must be start');
          } else if (m.data) {
            await this.writeStdin(exec, offset, Buffer.from(m.data), false);
            offset += m.data.length;
          } else if (m.end) {
            await this.writeStdin(exec, offset, Buffer.alloc(0), true);
          }
        }
        return {};
      },
      taskExecStdinStatus: async (r: { taskId: string; execId: string }, ctx) => {
        const { exec } = this.exec(r.taskId, r.execId, ctx);
        return { numBytesWritten: exec.stdinWritten, closed: exec.stdinClosed || !!exec.end };
      },
      taskExecPoll: async (r: { taskId: string; execId: string }, ctx) =>
        this.exec(r.taskId, r.execId, ctx).exec.end ?? {},
      taskExecWait: async (r: { taskId: string; execId: string }, ctx) => {
        const { exec } = this.exec(r.taskId, r.execId, ctx);
        await waitFor(exec.changed, () => !!exec.end, 55_000, ctx.signal);
        if (!exec.end) throw new ServerError(Status.DEADLINE_EXCEEDED, 'exec still running');
        return exec.end;
      },
    };
  }

  private async writeStdin(exec: Exec, offset: number, data: Buffer, eof: boolean): Promise<void> {
    if (exec.stdinClosed) {
      if (data.length === 0 && eof) return;
      throw new ServerError(Status.FAILED_PRECONDITION, 'stdin is closed');
    }
    if (offset > exec.stdinWritten)
      throw new ServerError(Status.OUT_OF_RANGE, `offset ${offset} is past the ${exec.stdinWritten} bytes written`);
    const fresh = data.subarray(exec.stdinWritten - offset);
    if (fresh.length > 0 && !exec.end) {
      try {
        await exec.process.writeStdin(fresh);
      } catch {
        // the command exited or closed its stdin: Modal drops the bytes the same way
      }
    }
    exec.stdinWritten += fresh.length;
    if (eof) {
      exec.stdinClosed = true;
      exec.process.closeStdin();
    }
  }

  // ---------------------------------------------------------------- plumbing

  /** The isolation's own support dir lives under /opt: bound again over an image's /opt. */
  private supportBind(): string[] {
    return this.basePlan!.supportDir ? ['--ro-bind', this.basePlan!.supportDir, SUPPORT_MOUNT] : [];
  }

  /** Wraps each handler: checks credentials, fills every response through its message type. */
  private serve(
    def: ServiceDefinition,
    handlers: Record<string, Handler>,
    controlPlane: boolean,
  ): Record<string, unknown> {
    const impl: Record<string, unknown> = {};
    for (const [name, method] of Object.entries(def.methods)) {
      const h = handlers[name];
      const check = (ctx: CallContext) => (controlPlane ? this.checkToken(ctx, name) : this.checkRouterJwt(ctx));
      if (!h) {
        impl[name] = method.responseStream
          ? async function* () {
              yield* [];
              throw new ServerError(
                Status.UNIMPLEMENTED,
                `the Modal fake does not implement ${def.name}/${method.name}`,
              );
            }
          : async () => {
              throw new ServerError(
                Status.UNIMPLEMENTED,
                `the Modal fake does not implement ${def.name}/${method.name}`,
              );
            };
      } else if (method.responseStream) {
        impl[name] = async function* (req: unknown, ctx: CallContext) {
          check(ctx);
          for await (const item of h(req, ctx) as AsyncIterable<unknown>) yield method.responseType.fromPartial(item);
        };
      } else {
        impl[name] = async (req: unknown, ctx: CallContext) => {
          check(ctx);
          return method.responseType.fromPartial(await (h(req, ctx) as Promise<unknown>));
        };
      }
    }
    return impl;
  }

  private checkToken(ctx: CallContext, method: string): void {
    if (this.faults.auth) throw new ServerError(Status.UNAUTHENTICATED, 'Invalid token id or secret');
    const id = ctx.metadata.get('x-modal-token-id');
    const secret = ctx.metadata.get('x-modal-token-secret');
    const ok = this.o.tokens?.length ? this.o.tokens.some((t) => t.id === id && t.secret === secret) : !!id && !!secret;
    if (!ok) throw new ServerError(Status.UNAUTHENTICATED, 'Invalid token id or secret');
    if (method !== 'authTokenGet' && !this.jwts.has(ctx.metadata.get('x-modal-auth-token') ?? ''))
      throw new ServerError(Status.UNAUTHENTICATED, 'Missing or invalid auth token');
  }

  private checkRouterJwt(ctx: CallContext): void {
    const jwt = (ctx.metadata.get('authorization') ?? '').replace(/^Bearer /, '');
    if (!this.jwts.has(jwt)) throw new ServerError(Status.UNAUTHENTICATED, 'invalid command router token');
  }

  private jwt(claims: Record<string, string>): string {
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ ...claims, exp: Math.floor(Date.now() / 1000) + 3600 })}.${randomBytes(16).toString('base64url')}`;
    this.jwts.set(token, claims.task_id ?? '');
    return token;
  }

  private sandbox(id: string): FakeSandbox {
    const s = this.sandboxes.get(id);
    if (!s) throw new ServerError(Status.NOT_FOUND, `Sandbox ${id} not found`);
    return s;
  }

  private task(taskId: string, ctx: CallContext): FakeSandbox {
    const jwt = (ctx.metadata.get('authorization') ?? '').replace(/^Bearer /, '');
    if (this.jwts.get(jwt) !== taskId) throw new ServerError(Status.PERMISSION_DENIED, 'token is not for this task');
    const s = this.byTask.get(taskId);
    if (!s) throw new ServerError(Status.NOT_FOUND, `Task ${taskId} not found`);
    if (s.result) throw new ServerError(Status.NOT_FOUND, `Task ${taskId} has finished: ${s.result.exception}`);
    return s;
  }

  private exec(taskId: string, execId: string, ctx: CallContext): { sandbox: FakeSandbox; exec: Exec } {
    const jwt = (ctx.metadata.get('authorization') ?? '').replace(/^Bearer /, '');
    if (this.jwts.get(jwt) !== taskId) throw new ServerError(Status.PERMISSION_DENIED, 'token is not for this task');
    const s = this.byTask.get(taskId);
    const exec = s?.execs.get(execId);
    if (!s || !exec) throw new ServerError(Status.NOT_FOUND, `exec ${execId} not found`);
    if (s.result && !exec.end)
      throw new ServerError(Status.NOT_FOUND, `Task ${taskId} has finished: ${s.result.exception}`);
    return { sandbox: s, exec };
  }

  private secret(id: string): Record<string, string> {
    const env = this.secrets.get(id);
    if (!env) throw new ServerError(Status.NOT_FOUND, `Secret ${id} not found`);
    return env;
  }
}

type Handler = (req: any, ctx: CallContext) => Promise<unknown> | AsyncIterable<unknown>;

interface SandboxCreateRequest {
  appId: string;
  secretSources?: ExecStartRequest['secretSources'];
  tags: Array<{ tagName: string; tagValue: string }>;
  definition?: {
    imageId: string;
    timeoutSecs: number;
    secretIds: string[];
    networkAccess?: { networkAccessType: number };
    blockNetwork?: boolean;
    resources?: { milliCpu: number; memoryMb: number };
  };
}

interface ExecStartRequest {
  taskId: string;
  execId: string;
  commandArgs: string[];
  stdoutConfig: number;
  stderrConfig: number;
  timeoutSecs?: number;
  workdir?: string;
  secretIds: string[];
  secretSources: Array<{ secretId?: string; env?: { contents: Record<string, string> } }>;
  env: Record<string, string>;
}

function tokenOf(ctx: CallContext): string {
  return ctx.metadata.get('x-modal-token-id') ?? '';
}

function notify(listeners: Set<() => void>): void {
  for (const l of [...listeners]) l();
}

/** Resolves when `done()` holds (checked on each notification), the time is up, or the call is aborted. */
function waitFor(listeners: Set<() => void>, done: () => boolean, ms: number, signal: AbortSignal): Promise<void> {
  if (done() || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = () => {
      listeners.delete(check);
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    };
    const check = () => {
      if (done()) finish();
    };
    const timer = setTimeout(finish, ms);
    timer.unref();
    listeners.add(check);
    signal.addEventListener('abort', finish);
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

export async function startModalFake(o: ModalFakeOptions = {}): Promise<ModalFake> {
  return new ModalFake(o).start();
}
