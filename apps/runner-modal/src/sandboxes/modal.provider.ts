import { Logger } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { inSpan } from '@toolplane/observability';
import { launcherBase, parseReport, proofJson, proofOf, SandboxLayout, SetupReport, SUPPORT_DIGEST, SUPPORT_FILES, type LauncherSettings, type Proof } from '@toolplane/sandbox';
import type { Image, Sandbox } from 'modal';
import { createHash, randomBytes } from 'node:crypto';
import type { ModalRunnerConfig } from '../runner-modal.config';
import { isSandboxGone, providerError, VENV_DIR, type ModalAccount, type ModalApi } from './modal.api';

export function step<T>(name: string, attributes: Record<string, string | number | boolean>, fn: (span: Span) => Promise<T>): Promise<T> {
  return inSpan('runner-modal', name, fn, attributes);
}

/** Tags of every sandbox runner-modal makes: the deployment, and the environment key (org, token, config, image, launcher). */
export const TAGS = { deployment: 'toolplane-deployment', key: 'toolplane-key', org: 'toolplane-org' } as const;

/** What decides which sandboxes a call may use: the org (and its token), its sandbox config, its requirements. */
export interface EnvironmentRequest {
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

export interface EnvironmentKeys {
  /** The `toolplane-key` tag: everything a sandbox was made for (a different key never shares it). */
  key: string;
  /** (deployment, org, token, image): a newer config fingerprint of a family retires the older sandboxes. */
  family: string;
}

export function environmentKeys(c: ModalRunnerConfig, req: EnvironmentRequest): EnvironmentKeys {
  const hash = (...parts: Array<string | number | boolean | null>) => createHash('sha256').update(parts.map(String).join('\0')).digest('hex').slice(0, 32);
  const token = hash(req.account.tokenId, req.account.tokenSecret);
  return {
    key: hash(c.MODAL_DEPLOYMENT, req.org, token, req.fingerprint, req.network, req.cpu, req.memoryMiB, req.lanes, c.MODAL_IMAGE, JSON.stringify(req.pip), req.node, SUPPORT_DIGEST),
    family: hash(c.MODAL_DEPLOYMENT, req.org, token, JSON.stringify(req.pip), req.node),
  };
}

/** One ready sandbox: set up (harness uploaded), proved clean, and what it was proved against. */
export interface ReadySandbox {
  sandbox: Sandbox;
  proof: Proof;
  /** Node answers in it (MODAL_NODE). */
  node: boolean;
}

/**
 * The environment store of runner-modal: images (one per requirements set, built once, at build
 * time), and sandboxes made from them, set up and readiness-probed (a sandbox is ready only once
 * the launcher's setup, an exec, has answered: Modal's create returns before scheduling), proved
 * clean again, found again by tags, terminated.
 */
export class ModalSandboxes {
  private readonly log = new Logger(ModalSandboxes.name);
  readonly layout: SandboxLayout;
  readonly settings: LauncherSettings;

  constructor(
    private readonly api: ModalApi,
    private readonly c: ModalRunnerConfig,
  ) {
    this.layout = new SandboxLayout(c.MODAL_STATE_DIR);
    this.settings = { python: c.MODAL_PYTHON, node: c.MODAL_NODE, toolUid: c.MODAL_TOOL_UID, watch: c.MODAL_WATCH_PATHS };
  }

  /** The interpreter tools of this environment run on. */
  python(req: EnvironmentRequest): string {
    return req.pip.length ? `${VENV_DIR}/bin/python3` : this.c.MODAL_PYTHON;
  }

  image(req: EnvironmentRequest): Promise<Image> {
    return step('build image', { 'toolplane.requirements.count': req.pip.length, 'toolplane.image.node': req.node }, () => this.api.image(req.account, req.pip, req.node)).catch((e: unknown) => {
      if (e instanceof Error && /^Image build for .* failed/.test(e.message)) {
        throw new ToolplaneError(ErrorCode.DEPENDENCY_INSTALL_FAILED, `the requirements did not install in the Modal image: ${e.message.split('\n').slice(-12).join('\n').slice(0, 3000)}`, { provider: 'modal' });
      }
      throw providerError(e, req.account, 'building the image');
    });
  }

  /** A new sandbox of the environment, set up and proved clean (terminated if that fails). */
  async create(req: EnvironmentRequest, keys: EnvironmentKeys): Promise<ReadySandbox> {
    const image = await this.image(req);
    const sandbox = await step('create sandbox', { 'toolplane.org.id': req.org }, () =>
      this.api.create(req.account, image, {
        tags: { [TAGS.deployment]: this.c.MODAL_DEPLOYMENT, [TAGS.key]: keys.key, [TAGS.org]: req.org },
        network: req.network,
        cpu: req.cpu,
        memoryMiB: req.memoryMiB,
      }),
    ).catch((e: unknown) => {
      throw providerError(e, req.account, 'creating a sandbox');
    });
    try {
      return await this.setUp(req, sandbox);
    } catch (e) {
      await sandbox.terminate().catch(() => undefined);
      throw e instanceof ToolplaneError ? e : isSandboxGone(e) ? new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'the new Modal sandbox went away while it was set up', { provider: 'modal' }) : providerError(e, req.account, 'setting up a sandbox');
    }
  }

  /** Uploads the harness and runs the launcher's setup: the readiness probe and the first proof. */
  private async setUp(req: EnvironmentRequest, sandbox: Sandbox): Promise<ReadySandbox> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`setup-${nonce}`);
    const spec = { ...launcherBase(this.settings, this.layout), python: this.python(req), nonce, report: `${dir}/report.json`, lanes: req.lanes, env_dir: null, requirements_hash: null, pip_args: null, npm_args: null };
    const attrs = { 'toolplane.sandbox.id': sandbox.sandboxId };
    await step('upload harness', attrs, async () => {
      for (const f of SUPPORT_FILES) await sandbox.filesystem.writeBytes(f.data, this.layout.file(f.name));
      await sandbox.filesystem.writeText(JSON.stringify(spec), `${dir}/spec.json`);
    });
    const exit = await step('probe sandbox', attrs, async () => {
      const p = await sandbox.exec(['/bin/sh', '-c', this.layout.command(this.c.MODAL_PYTHON, 'setup', `${dir}/spec.json`)], { stdout: 'ignore', timeoutMs: 120_000 });
      return p.wait();
    });
    if (exit !== 0) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the Modal sandbox could not be set up (the launcher exited with ${exit})`, { provider: 'modal' });
    const report = parseReport(SetupReport, await sandbox.filesystem.readText(`${dir}/report.json`), nonce);
    const proof = report ? proofOf(report) : undefined;
    if (!report || !proof) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the Modal sandbox could not be set up: ${report?.dirty.join('; ') || 'no report'}`, { provider: 'modal' });
    if (report.python === false) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the Modal image has no ${this.python(req)} (MODAL_PYTHON)`, { provider: 'modal' });
    this.log.log(`sandbox ${sandbox.sandboxId} ready for org ${req.org}${req.pip.length ? ` (${req.pip.length} requirement(s) in its image)` : ''}`);
    return { sandbox, proof, node: report.node === true };
  }

  /** Sandboxes of an earlier runner process of this environment: adopted when they prove themselves clean from their own proof file, else terminated. */
  async adopt(req: EnvironmentRequest, keys: EnvironmentKeys): Promise<ReadySandbox[]> {
    // Shared sandboxes (calls_per_sandbox > 1) are not taken over: Modal's timeout ends them.
    if (req.lanes > 1) return [];
    let found: Sandbox[];
    try {
      found = await step('find sandboxes', { 'toolplane.org.id': req.org }, () => this.api.list(req.account, { [TAGS.deployment]: this.c.MODAL_DEPLOYMENT, [TAGS.key]: keys.key }));
    } catch (e) {
      this.log.warn(`could not look for earlier sandboxes of org ${req.org}: ${(e as Error).message}`);
      return [];
    }
    const out: ReadySandbox[] = [];
    for (const sandbox of found) {
      const proved = await this.proveWithRuntime(req, sandbox, { from_state: true }).catch(() => undefined);
      if (proved) out.push({ sandbox, ...proved });
      else await this.terminate(sandbox, 'found again but not provably clean');
    }
    if (out.length) this.log.log(`adopted ${out.length} sandbox(es) of org ${req.org} from an earlier runner`);
    return out;
  }

  /** Proves a sandbox clean (against `extra.proof`, or its own proof file with `from_state`); undefined: it is not. */
  async prove(req: EnvironmentRequest, sandbox: Sandbox, extra: Record<string, unknown>): Promise<Proof | undefined> {
    return (await this.proveWithRuntime(req, sandbox, extra))?.proof;
  }

  private async proveWithRuntime(req: EnvironmentRequest, sandbox: Sandbox, extra: Record<string, unknown>): Promise<{ proof: Proof; node: boolean } | undefined> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`prove-${nonce}`);
    const spec = { ...launcherBase(this.settings, this.layout), python: this.python(req), ...extra, nonce, report: `${dir}/report.json`, lanes: req.lanes, env_dir: null };
    return step('prove sandbox', { 'toolplane.sandbox.id': sandbox.sandboxId }, async () => {
      await sandbox.filesystem.writeText(JSON.stringify(spec), `${dir}/spec.json`);
      const p = await sandbox.exec(['/bin/sh', '-c', this.layout.command(this.c.MODAL_PYTHON, 'prove', `${dir}/spec.json`)], { stdout: 'ignore', timeoutMs: 60_000 });
      if ((await p.wait()) !== 0) return undefined;
      const r = parseReport(SetupReport, await sandbox.filesystem.readText(`${dir}/report.json`), nonce);
      const proof = r ? proofOf(r) : undefined;
      return proof ? { proof, node: r!.node === true } : undefined;
    });
  }

  proofJson(p: Proof): Record<string, unknown> {
    return proofJson(p);
  }

  async terminate(sandbox: Sandbox, reason: string): Promise<void> {
    this.log.log(`terminating sandbox ${sandbox.sandboxId}: ${reason}`);
    await sandbox.terminate().catch((e: Error) => this.log.warn(`terminating sandbox ${sandbox.sandboxId} failed: ${e.message}`));
    sandbox.detach();
  }
}
