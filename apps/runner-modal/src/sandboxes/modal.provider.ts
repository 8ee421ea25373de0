import { Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import {
  remoteStep,
  type ReadySandbox,
  type RemoteEnvironment,
  type RemoteEnvironmentAsk,
  type RemoteProvider,
  type RunningCommand,
} from '@toolplane/remote-runner';
import {
  launcherBase,
  parseReport,
  pipSpecifiers,
  proofJson,
  proofOf,
  RemoteSandboxLayout,
  SetupReport,
  SUPPORT_DIGEST,
  SUPPORT_FILES,
  type LauncherSettings,
  type Proof,
} from '@toolplane/sandbox';
import type { Image, Sandbox } from 'modal';
import { createHash, randomBytes } from 'node:crypto';
import type { ModalRunnerConfig } from '../runner-modal.config';
import {
  isDeadline,
  isSandboxGone,
  providerError,
  scrub,
  VENV_DIR,
  type ModalAccount,
  type ModalApi,
} from './modal.api';

/** Tags of every sandbox runner-modal makes: the deployment, and the environment key (org, token, config, image, launcher). */
export const TAGS = { deployment: 'toolplane-deployment', key: 'toolplane-key', org: 'toolplane-org' } as const;

/** Source types that run on Node (the image then has it: MODAL_NODE_INSTALL). */
const NODE_TYPES = new Set(['typescript', 'javascript']);

/** What decides which sandboxes a call may use: the org (and its token), its sandbox config, its requirements. */
export interface ModalEnvironmentRequest {
  org: string;
  account: ModalAccount;
  fingerprint: string | null;
  network: boolean;
  cpu: number;
  memoryMiB: number;
  pip: string[];
  /** calls_per_sandbox: calls one sandbox runs at once (1: never two). */
  lanes: number;
  /** TypeScript/JavaScript tools: the image has Node. */
  node: boolean;
}

type ModalEnvironment = RemoteEnvironment<ModalEnvironmentRequest, Sandbox>;

function step<T>(
  name: string,
  attributes: Record<string, string | number | boolean>,
  fn: () => Promise<T>,
): Promise<T> {
  return remoteStep('modal', name, attributes, fn);
}

/** Modal takes exec timeouts in whole seconds: round up. */
export function wholeSecondsMs(ms: number): number {
  return Math.ceil(ms / 1000) * 1000;
}

export function environmentKeys(
  c: ModalRunnerConfig,
  req: ModalEnvironmentRequest,
): { key: string; family: string; requirementsHash: null } {
  const hash = (...parts: Array<string | number | boolean | null>) =>
    createHash('sha256').update(parts.map(String).join('\0')).digest('hex').slice(0, 32);
  const token = hash(req.account.tokenId, req.account.tokenSecret);
  return {
    key: hash(
      c.MODAL_DEPLOYMENT,
      req.org,
      token,
      req.fingerprint,
      req.network,
      req.cpu,
      req.memoryMiB,
      req.lanes,
      c.MODAL_IMAGE,
      JSON.stringify(req.pip),
      req.node,
      SUPPORT_DIGEST,
    ),
    family: hash(c.MODAL_DEPLOYMENT, req.org, token, JSON.stringify(req.pip), req.node),
    // The requirements live in the image, not in a keyed environment of the sandbox.
    requirementsHash: null,
  };
}

/**
 * runner-modal's provider adapter for the remote-runner core: images (one per requirements set,
 * built once, at build time), and sandboxes made from them, set up and readiness-probed (a sandbox
 * is ready only once the launcher's setup, an exec, has answered: Modal's create returns before
 * scheduling), proved clean again, found again by tags, terminated; a call's files go through
 * the filesystem API and its launcher exec carries the env.
 */
export class ModalProvider implements RemoteProvider<ModalEnvironmentRequest, Sandbox> {
  readonly name = 'modal';
  readonly label = 'Modal';
  readonly configPrefix = 'MODAL';
  /** The shared launcher's settings, and its dir in the sandbox (MODAL_STATE_DIR). */
  readonly launcher: { settings: LauncherSettings; layout: RemoteSandboxLayout };

  constructor(
    private readonly api: ModalApi,
    private readonly c: ModalRunnerConfig,
  ) {
    const settings = {
      python: c.MODAL_PYTHON,
      node: c.MODAL_NODE,
      toolUid: c.MODAL_TOOL_UID,
      watch: c.MODAL_WATCH_PATHS,
    };
    this.launcher = { settings, layout: new RemoteSandboxLayout(c.MODAL_STATE_DIR) };
  }

  private readonly log = new Logger(ModalProvider.name);

  request(req: RemoteEnvironmentAsk): ModalEnvironmentRequest {
    // The org's own token pair (its provider-scoped secrets), else the runner's: never another org's, never half of each.
    const own =
      req.provider_credentials?.MODAL_TOKEN_ID !== undefined ||
      req.provider_credentials?.MODAL_TOKEN_SECRET !== undefined;
    const tokenId = own ? req.provider_credentials?.MODAL_TOKEN_ID : this.c.MODAL_TOKEN_ID;
    const tokenSecret = own ? req.provider_credentials?.MODAL_TOKEN_SECRET : this.c.MODAL_TOKEN_SECRET;
    if (!tokenId || !tokenSecret) {
      throw new ToolplaneError(
        ErrorCode.PROVIDER_AUTH_FAILED,
        'No Modal token for this org: set the sandbox secrets MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (scope sandbox, provider modal), or those of runner-modal',
        { provider: 'modal' },
      );
    }
    const node = NODE_TYPES.has(req.source_type);
    if (req.source_type !== 'python' && !node)
      throw new ToolplaneError(
        ErrorCode.UNSUPPORTED_TOOL,
        `runner-modal runs python, typescript and javascript tools, not ${req.source_type}`,
        { provider: 'modal' },
      );
    if (node && (req.npm_requirements ?? []).length > 0) {
      throw new ToolplaneError(
        ErrorCode.UNSUPPORTED_TOOL,
        'runner-modal does not install npm requirements yet (its images carry pip requirements only): run this tool on local or e2b',
        { provider: 'modal', source_type: req.source_type },
      );
    }
    let pip: string[];
    try {
      pip = req.source_type === 'python' ? pipSpecifiers(req.pip_requirements ?? []) : [];
    } catch (e) {
      throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `pip requirements: ${(e as Error).message}`);
    }
    return {
      org: req.org_id,
      account: { tokenId, tokenSecret },
      fingerprint: req.sandbox_config_fingerprint ?? null,
      network: req.sandbox?.network ?? this.c.MODAL_NETWORK,
      cpu: req.sandbox?.cpu ?? this.c.MODAL_CPU,
      memoryMiB: req.sandbox?.memory_mb ?? this.c.MODAL_MEMORY_MIB,
      pip,
      lanes: req.sandbox?.calls_per_sandbox ?? 1,
      node,
    };
  }

  keys(req: ModalEnvironmentRequest) {
    return environmentKeys(this.c, req);
  }

  id(box: Sandbox): string {
    return box.sandboxId;
  }

  /** The interpreter tools of this environment run on. */
  python(env: ModalEnvironment): string {
    return env.request.pip.length ? `${VENV_DIR}/bin/python3` : this.c.MODAL_PYTHON;
  }

  moduleDir(): string {
    return this.launcher.layout.state;
  }

  image(req: ModalEnvironmentRequest): Promise<Image> {
    return step(
      'build image',
      { 'toolplane.requirements.count': req.pip.length, 'toolplane.image.node': req.node },
      () => this.api.image(req.account, req.pip, req.node),
    ).catch((e: unknown) => {
      if (e instanceof Error && /^Image build for .* failed/.test(e.message)) {
        throw new ToolplaneError(
          ErrorCode.DEPENDENCY_INSTALL_FAILED,
          `the requirements did not install in the Modal image: ${e.message.split('\n').slice(-12).join('\n').slice(0, 3000)}`,
          { provider: 'modal' },
        );
      }
      throw providerError(e, req.account, 'building the image');
    });
  }

  /** A new sandbox of the environment, set up and proved clean (terminated if that fails). */
  async create(env: ModalEnvironment): Promise<ReadySandbox<Sandbox>> {
    const req = env.request;
    const image = await this.image(req);
    const sandbox = await step('create sandbox', { 'toolplane.org.id': req.org }, () =>
      this.api.create(req.account, image, {
        tags: { [TAGS.deployment]: this.c.MODAL_DEPLOYMENT, [TAGS.key]: env.key, [TAGS.org]: req.org },
        network: req.network,
        cpu: req.cpu,
        memoryMiB: req.memoryMiB,
      }),
    ).catch((e: unknown) => {
      throw providerError(e, req.account, 'creating a sandbox');
    });
    try {
      return await this.setUp(env, sandbox);
    } catch (e) {
      await sandbox.terminate().catch(() => undefined);
      throw e instanceof ToolplaneError
        ? e
        : isSandboxGone(e)
          ? new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'the new Modal sandbox went away while it was set up', {
              provider: 'modal',
            })
          : providerError(e, req.account, 'setting up a sandbox');
    }
  }

  /** Uploads the harness and runs the launcher's setup: the readiness probe and the first proof. */
  private async setUp(env: ModalEnvironment, sandbox: Sandbox): Promise<ReadySandbox<Sandbox>> {
    const req = env.request;
    const nonce = randomBytes(16).toString('hex');
    const dir = this.launcher.layout.callDir(`setup-${nonce}`);
    const spec = {
      ...launcherBase(this.launcher.settings, this.launcher.layout),
      python: this.python(env),
      nonce,
      report: `${dir}/report.json`,
      lanes: req.lanes,
      env_dir: null,
      requirements_hash: null,
      pip_args: null,
      npm_args: null,
    };
    const attrs = { 'toolplane.sandbox.id': sandbox.sandboxId };
    await step('upload harness', attrs, async () => {
      for (const f of SUPPORT_FILES) await sandbox.filesystem.writeBytes(f.data, this.launcher.layout.file(f.name));
      await sandbox.filesystem.writeText(JSON.stringify(spec), `${dir}/spec.json`);
    });
    const exit = await step('probe sandbox', attrs, async () => {
      const p = await sandbox.exec(
        ['/bin/sh', '-c', this.launcher.layout.command(this.c.MODAL_PYTHON, 'setup', `${dir}/spec.json`)],
        { stdout: 'ignore', timeoutMs: 120_000 },
      );
      return p.wait();
    });
    if (exit !== 0)
      throw new ToolplaneError(
        ErrorCode.SANDBOX_FAILURE,
        `the Modal sandbox could not be set up (the launcher exited with ${exit})`,
        { provider: 'modal' },
      );
    const report = parseReport(SetupReport, await sandbox.filesystem.readText(`${dir}/report.json`), nonce);
    const proof = report ? proofOf(report) : undefined;
    if (!report || !proof)
      throw new ToolplaneError(
        ErrorCode.SANDBOX_FAILURE,
        `the Modal sandbox could not be set up: ${report?.dirty.join('; ') || 'no report'}`,
        { provider: 'modal' },
      );
    if (report.python === false)
      throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the Modal image has no ${this.python(env)} (MODAL_PYTHON)`, {
        provider: 'modal',
      });
    this.log.log(
      `sandbox ${sandbox.sandboxId} ready for org ${req.org}${req.pip.length ? ` (${req.pip.length} requirement(s) in its image)` : ''}`,
    );
    return { box: sandbox, proof, node: report.node === true };
  }

  /** Sandboxes of an earlier runner process of this environment: adopted when they prove themselves clean from their own proof file, else terminated. */
  async discover(env: ModalEnvironment): Promise<Array<ReadySandbox<Sandbox>>> {
    const req = env.request;
    // Shared sandboxes (calls_per_sandbox > 1) are not taken over: Modal's timeout ends them.
    if (req.lanes > 1) return [];
    let found: Sandbox[];
    try {
      found = await step('find sandboxes', { 'toolplane.org.id': req.org }, () =>
        this.api.list(req.account, { [TAGS.deployment]: this.c.MODAL_DEPLOYMENT, [TAGS.key]: env.key }),
      );
    } catch (e) {
      this.log.warn(`could not look for earlier sandboxes of org ${req.org}: ${(e as Error).message}`);
      return [];
    }
    const out: Array<ReadySandbox<Sandbox>> = [];
    for (const sandbox of found) {
      const proved = await this.proveWithRuntime(env, sandbox, { from_state: true }).catch(() => undefined);
      if (proved) out.push({ box: sandbox, ...proved });
      else await this.kill(env, sandbox, 'found again but not provably clean');
    }
    if (out.length) this.log.log(`adopted ${out.length} sandbox(es) of org ${req.org} from an earlier runner`);
    return out;
  }

  /** Proves a drained sandbox clean against its last proof; undefined: it is not. */
  async prove(env: ModalEnvironment, box: Sandbox, proof: Proof): Promise<Proof | undefined> {
    return (await this.proveWithRuntime(env, box, { proof: proofJson(proof) }))?.proof;
  }

  private async proveWithRuntime(
    env: ModalEnvironment,
    sandbox: Sandbox,
    extra: Record<string, unknown>,
  ): Promise<{ proof: Proof; node: boolean } | undefined> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.launcher.layout.callDir(`prove-${nonce}`);
    const spec = {
      ...launcherBase(this.launcher.settings, this.launcher.layout),
      python: this.python(env),
      ...extra,
      nonce,
      report: `${dir}/report.json`,
      lanes: env.lanes,
      env_dir: null,
    };
    return step('prove sandbox', { 'toolplane.sandbox.id': sandbox.sandboxId }, async () => {
      await sandbox.filesystem.writeText(JSON.stringify(spec), `${dir}/spec.json`);
      const p = await sandbox.exec(
        ['/bin/sh', '-c', this.launcher.layout.command(this.c.MODAL_PYTHON, 'prove', `${dir}/spec.json`)],
        { stdout: 'ignore', timeoutMs: 60_000 },
      );
      if ((await p.wait()) !== 0) return undefined;
      const r = parseReport(SetupReport, await sandbox.filesystem.readText(`${dir}/report.json`), nonce);
      const proof = r ? proofOf(r) : undefined;
      return proof ? { proof, node: r!.node === true } : undefined;
    });
  }

  async kill(_env: ModalEnvironment, box: Sandbox, reason: string): Promise<void> {
    this.log.log(`terminating sandbox ${box.sandboxId}: ${reason}`);
    await box
      .terminate()
      .catch((e: Error) => this.log.warn(`terminating sandbox ${box.sandboxId} failed: ${e.message}`));
    box.detach();
  }

  async write(_env: ModalEnvironment, box: Sandbox, files: Array<{ path: string; data: string }>): Promise<void> {
    for (const f of files) await box.filesystem.writeText(f.data, f.path);
  }

  async start(
    _env: ModalEnvironment,
    box: Sandbox,
    command: string,
    o: { envs: Record<string, string>; timeoutMs: number; stdout: (b: Buffer) => void; stderr: (b: Buffer) => void },
  ): Promise<RunningCommand> {
    const proc = await box.exec(['/bin/sh', '-c', command], {
      mode: 'binary',
      env: o.envs,
      timeoutMs: wholeSecondsMs(o.timeoutMs),
    });
    return {
      wait: () =>
        Promise.all([drain(proc.stdout, o.stdout), drain(proc.stderr, o.stderr), proc.wait()]).then(
          ([, , exit]) => ({ exit }),
          (e: unknown) => ({ lost: e }),
        ),
      // The sandbox is terminated right after: its exec ends with it.
      stop: () => undefined,
    };
  }

  read(_env: ModalEnvironment, box: Sandbox, path: string): Promise<string> {
    return box.filesystem.readText(path);
  }

  isGone(e: unknown): boolean {
    return isSandboxGone(e);
  }

  isDeadline(e: unknown): boolean {
    return isDeadline(e);
  }

  async ended(box: Sandbox): Promise<boolean> {
    return (await box.poll()) !== null;
  }

  providerError(e: unknown, env: ModalEnvironment, what: string): ToolplaneError {
    return providerError(e, env.request.account, what);
  }

  scrub(text: string, env: ModalEnvironment): string {
    return scrub(text, env.request.account);
  }

  noNode(): string {
    return `the Modal image (${this.c.MODAL_IMAGE} with MODAL_NODE_INSTALL) has no Node at ${this.c.MODAL_NODE}: TypeScript/JavaScript tools cannot run on it`;
  }
}

/** Reads a process stream to its end. */
async function drain(stream: ReadableStream<Uint8Array>, push: (b: Buffer) => void): Promise<void> {
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    push(Buffer.from(value));
  }
}
