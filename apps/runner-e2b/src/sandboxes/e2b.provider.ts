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
  DependencyInstallError,
  EXIT_BUSY,
  failedPackage,
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
import type { Sandbox } from 'e2b';
import { createHash, randomBytes } from 'node:crypto';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { exitCodeOf, isSandboxGone, providerError, scrub, type E2bAccount, type E2bApi } from './e2b.api';

/** What decides which sandboxes a call may use: the org (and its key), its sandbox config, its requirements. */
export interface E2bEnvironmentRequest {
  org: string;
  account: E2bAccount;
  fingerprint: string | null;
  template: string;
  network: boolean;
  /** calls_per_sandbox: calls one sandbox runs at once (1: never two). */
  lanes: number;
  pip: string[];
  npm: string[];
  buildScripts: boolean;
}

type E2bEnvironment = RemoteEnvironment<E2bEnvironmentRequest, Sandbox>;

/** Metadata tags of runner-e2b's sandboxes: how a restarted runner finds its own (and only them). */
export const TAGS = {
  deployment: 'toolplane-runner-deployment',
  org: 'toolplane-org',
  family: 'toolplane-family',
  key: 'toolplane-key',
  fingerprint: 'toolplane-fingerprint',
  requirements: 'toolplane-requirements',
  lanes: 'toolplane-calls-per-sandbox',
} as const;

const NPM_SPEC = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(@[A-Za-z0-9.^~<>=|*+ -]{1,64})?$/;

function step<T>(
  name: string,
  attributes: Record<string, string | number | boolean>,
  fn: () => Promise<T>,
): Promise<T> {
  return remoteStep('e2b', name, attributes, fn);
}

const hash = (...parts: Array<string | number | boolean | null>) =>
  createHash('sha256')
    .update(parts.map((p) => String(p)).join('\0'))
    .digest('hex');

/** The keys of an environment request: its sandbox key, its family, its requirements hash (null: none). */
export function environmentKeys(
  deployment: string,
  python: string,
  r: E2bEnvironmentRequest,
): { key: string; family: string; requirementsHash: string | null } {
  const needs = r.pip.length > 0 || r.npm.length > 0;
  const requirementsHash = needs
    ? hash(
        'requirements',
        python,
        JSON.stringify([...r.pip].sort()),
        JSON.stringify([...r.npm].sort()),
        r.buildScripts,
      ).slice(0, 20)
    : null;
  const family = hash('family', deployment, r.org, requirementsHash).slice(0, 24);
  // The key's hash covers the org's API key (rotated key: new sandboxes), never the key itself.
  const key = hash(
    'key',
    family,
    r.fingerprint,
    hash(r.account.apiKey),
    r.template,
    r.network,
    r.lanes,
    SUPPORT_DIGEST,
  ).slice(0, 24);
  return { key, family, requirementsHash };
}

/**
 * runner-e2b's provider adapter for the remote-runner core: makes a sandbox for an environment
 * (created, the harnesses uploaded, its requirements installed once by the launcher, its baseline
 * taken), finds the sandboxes of earlier runner processes again by their tags, proves drained ones
 * clean, kills, renews E2B's own timeout; a call's files go through envd's filesystem API and its
 * launcher command through envd's process RPC.
 */
export class E2bProvider implements RemoteProvider<E2bEnvironmentRequest, Sandbox> {
  readonly name = 'e2b';
  readonly label = 'E2B';
  readonly configPrefix = 'E2B';
  private readonly log = new Logger(E2bProvider.name);
  readonly launcher: { settings: LauncherSettings; layout: RemoteSandboxLayout };

  constructor(
    private readonly api: E2bApi,
    private readonly c: E2bRunnerConfig,
  ) {
    this.launcher = {
      layout: new RemoteSandboxLayout(c.E2B_STATE_DIR),
      settings: { python: c.E2B_PYTHON, node: c.E2B_NODE, toolUid: c.E2B_TOOL_UID, watch: c.E2B_WATCH_PATHS },
    };
  }

  private get layout(): RemoteSandboxLayout {
    return this.launcher.layout;
  }

  /** E2B's own timeout of a sandbox: past the idle TTL, so a runner that died leaves nothing running for long. */
  get sandboxTimeoutMs(): number {
    return this.c.E2B_IDLE_TTL_MS + 60_000;
  }

  request(req: RemoteEnvironmentAsk): E2bEnvironmentRequest {
    // The org's own key (its provider-scoped secret), else the runner's: never another org's.
    const apiKey = req.provider_credentials?.E2B_API_KEY ?? this.c.E2B_API_KEY;
    if (!apiKey) {
      throw new ToolplaneError(
        ErrorCode.PROVIDER_AUTH_FAILED,
        'No E2B API key for this org: set the sandbox secret E2B_API_KEY (scope sandbox, provider e2b), or E2B_API_KEY of runner-e2b',
        { provider: 'e2b' },
      );
    }
    let pip: string[];
    try {
      pip = req.source_type === 'python' ? pipSpecifiers(req.pip_requirements ?? []) : [];
    } catch (e) {
      throw new ToolplaneError(ErrorCode.INVALID_ARGUMENTS, `pip requirements: ${(e as Error).message}`);
    }
    const npm =
      req.source_type === 'python'
        ? []
        : (req.npm_requirements ?? []).map((r) => (r.version ? `${r.name}@${r.version}` : r.name)).sort();
    const bad = npm.find((s) => !NPM_SPEC.test(s));
    if (bad)
      throw new ToolplaneError(
        ErrorCode.INVALID_ARGUMENTS,
        `npm requirements: ${JSON.stringify(bad)} is not a package name and version`,
      );
    return {
      org: req.org_id,
      account: { apiKey },
      fingerprint: req.sandbox_config_fingerprint ?? null,
      template: req.sandbox?.template ?? this.c.E2B_TEMPLATE,
      network: req.sandbox?.network ?? this.c.E2B_NETWORK,
      lanes: req.sandbox?.calls_per_sandbox ?? 1,
      pip,
      npm,
      buildScripts: req.sandbox?.build_scripts === true,
    };
  }

  keys(req: E2bEnvironmentRequest) {
    return environmentKeys(this.c.E2B_DEPLOYMENT, this.c.E2B_PYTHON, req);
  }

  id(box: Sandbox): string {
    return box.sandboxId;
  }

  tags(env: E2bEnvironment): Record<string, string> {
    return {
      [TAGS.deployment]: this.c.E2B_DEPLOYMENT,
      [TAGS.org]: env.org,
      [TAGS.family]: env.family,
      [TAGS.key]: env.key,
      [TAGS.fingerprint]: env.request.fingerprint ?? 'none',
      [TAGS.requirements]: env.requirementsHash ?? 'none',
      [TAGS.lanes]: String(env.lanes),
    };
  }

  async create(env: E2bEnvironment, progress: (line: string) => void): Promise<ReadySandbox<Sandbox>> {
    const req = env.request;
    const attrs = {
      'toolplane.org.id': env.org,
      'toolplane.e2b.template': req.template,
      'toolplane.e2b.environment': env.key,
    };
    const sandbox = await remoteStep('e2b', 'create sandbox', attrs, async (span) => {
      try {
        const s = await this.api.create(req.account, {
          template: req.template,
          metadata: this.tags(env),
          timeoutMs: this.sandboxTimeoutMs,
          network: req.network,
          allowOut: this.indexHosts(),
        });
        span.setAttribute('toolplane.sandbox.id', s.sandboxId);
        return s;
      } catch (e) {
        throw providerError(e, req.account, 'creating a sandbox');
      }
    });
    try {
      return await this.setUp(env, sandbox, progress);
    } catch (e) {
      await sandbox.kill().catch(() => undefined);
      throw e;
    }
  }

  private async setUp(
    env: E2bEnvironment,
    sandbox: Sandbox,
    progress: (line: string) => void,
  ): Promise<ReadySandbox<Sandbox>> {
    const req = env.request;
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`setup-${nonce}`);
    const user = this.c.E2B_COMMAND_USER;
    const specs = [...req.pip, ...req.npm];
    const spec = {
      ...launcherBase(this.launcher.settings, this.layout),
      nonce,
      report: `${dir}/report.json`,
      lanes: env.lanes,
      env_dir: env.requirementsHash ? this.layout.envDir(env.requirementsHash) : null,
      requirements_hash: env.requirementsHash,
      pip_args: req.pip.length ? this.pipArgs(req.pip) : null,
      npm_args: req.npm.length ? this.npmArgs(env) : null,
      npm: this.c.E2B_NPM,
      build_timeout_ms: this.c.E2B_BUILD_TIMEOUT_MS,
    };
    const attrs = { 'toolplane.sandbox.id': sandbox.sandboxId, 'toolplane.e2b.environment': env.key };
    await step('upload harness', attrs, () =>
      this.sandboxCall(env, 'uploading the harness', () =>
        sandbox.files.write(
          [
            ...SUPPORT_FILES.map((f) => ({ path: this.layout.file(f.name), data: f.data.toString('utf8') })),
            { path: `${dir}/spec.json`, data: JSON.stringify(spec) },
          ],
          { user },
        ),
      ),
    );
    progress(specs.length ? `installing ${specs.join(' ')}` : 'setting up the sandbox');
    let tail = '';
    await step('install requirements', { ...attrs, 'toolplane.requirements.count': specs.length }, () =>
      this.sandboxCall(env, 'setting up the sandbox', async () => {
        try {
          await sandbox.commands.run(this.layout.command(this.c.E2B_PYTHON, 'setup', `${dir}/spec.json`), {
            user,
            envs: {},
            timeoutMs: this.c.E2B_BUILD_TIMEOUT_MS + this.c.E2B_COMMAND_GRACE_MS,
            onStdout: (d) => {
              tail = (tail + d).slice(-4000);
              const line = tail.trimEnd().split('\n').at(-1)?.trim();
              if (line) progress(line.slice(0, 300));
            },
          });
        } catch (e) {
          const code = exitCodeOf(e);
          if (code === undefined) throw e;
          throw new ToolplaneError(
            ErrorCode.SANDBOX_FAILURE,
            `the E2B sandbox could not be set up (the launcher exited with ${code}): ${scrub(String((e as { stderr?: string }).stderr ?? '').slice(-500), req.account)}`,
            { provider: 'e2b' },
          );
        }
      }),
    );
    const report = await step('read setup report', attrs, () =>
      this.readReport(env, sandbox, `${dir}/report.json`, nonce),
    );
    if (report.install && !report.install.ok) {
      const output = (report.install.output ?? []).join('\n');
      const errors = output.split('\n').filter((l) => /^ERROR:|^npm (ERR|error)/.test(l));
      const message = report.install.timed_out
        ? `${report.install.tool} did not finish within ${this.c.E2B_BUILD_TIMEOUT_MS} ms`
        : (errors.length ? errors.join('\n') : output.split('\n').slice(-10).join('\n')).slice(0, 4000);
      throw new DependencyInstallError(failedPackage(output, specs), message);
    }
    const proof = proofOf(report);
    if (!proof)
      throw new ToolplaneError(
        ErrorCode.SANDBOX_FAILURE,
        `the E2B sandbox could not be set up: ${report.dirty.join('; ') || 'no proof'}`,
        { provider: 'e2b' },
      );
    if (report.python === false)
      throw new ToolplaneError(
        ErrorCode.SANDBOX_FAILURE,
        `the E2B template ${req.template} has no ${this.c.E2B_PYTHON} (E2B_PYTHON)`,
        { provider: 'e2b' },
      );
    this.log.log(
      `sandbox ${sandbox.sandboxId} ready for org ${env.org} (environment ${env.key}${specs.length ? `, ${specs.length} requirement(s)` : ''})`,
    );
    return { box: sandbox, proof, node: report.node === true };
  }

  async discover(env: E2bEnvironment): Promise<Array<ReadySandbox<Sandbox>>> {
    const account = env.request.account;
    const infos = await step(
      'find sandboxes',
      { 'toolplane.org.id': env.org, 'toolplane.e2b.environment': env.key },
      async () => {
        try {
          return await this.api.list(account, { [TAGS.deployment]: this.c.E2B_DEPLOYMENT, [TAGS.family]: env.family });
        } catch (e) {
          throw providerError(e, account, 'listing sandboxes');
        }
      },
    );
    const adopted: Array<ReadySandbox<Sandbox>> = [];
    for (const info of infos) {
      const m = info.metadata ?? {};
      if (m[TAGS.org] !== env.org) continue;
      if (m[TAGS.fingerprint] !== (env.request.fingerprint ?? 'none')) {
        // Made under another sandbox config of the org: superseded.
        this.log.log(`sandbox ${info.sandboxId} of org ${env.org} has an older sandbox config: killing it`);
        await this.api.kill(account, info.sandboxId).catch(() => undefined);
        continue;
      }
      // Shared sandboxes (calls_per_sandbox > 1) are not taken over: E2B's timeout ends them.
      if (m[TAGS.key] !== env.key || env.lanes !== 1) continue;
      const found = await this.adopt(env, info.sandboxId).catch((e: Error) => {
        this.log.warn(`sandbox ${info.sandboxId} could not be taken over: ${scrub(e.message, account)}`);
        return undefined;
      });
      if (found) adopted.push(found);
    }
    return adopted;
  }

  /** Connects to a sandbox an earlier runner made and proves it clean from its own last proof; undefined when another replica uses it. */
  private async adopt(env: E2bEnvironment, sandboxId: string): Promise<ReadySandbox<Sandbox> | undefined> {
    const sandbox = await this.api.connect(env.request.account, sandboxId, this.sandboxTimeoutMs);
    const r = await this.runProve(env, sandbox, { from_state: true });
    if (r === 'busy') return undefined;
    const proof = r && proofOf(r);
    if (!r || !proof) {
      this.log.log(
        `sandbox ${sandboxId} could not prove itself clean (${r ? r.dirty.join('; ') : 'no report'}): killing it`,
      );
      await sandbox.kill().catch(() => undefined);
      return undefined;
    }
    this.log.log(`sandbox ${sandboxId} of org ${env.org} taken over (found by its tags)`);
    return { box: sandbox, proof, node: r.node === true };
  }

  async prove(env: E2bEnvironment, box: Sandbox, proof: Proof): Promise<Proof | undefined> {
    const r = await this.runProve(env, box, { proof: proofJson(proof) });
    return r && r !== 'busy' ? proofOf(r) : undefined;
  }

  private async runProve(
    env: E2bEnvironment,
    sandbox: Sandbox,
    extra: Record<string, unknown>,
  ): Promise<SetupReport | 'busy' | undefined> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`prove-${nonce}`);
    const user = this.c.E2B_COMMAND_USER;
    const spec = {
      ...launcherBase(this.launcher.settings, this.layout),
      ...extra,
      nonce,
      report: `${dir}/report.json`,
      lanes: env.lanes,
      env_dir: env.requirementsHash ? this.layout.envDir(env.requirementsHash) : null,
    };
    return step('prove sandbox', { 'toolplane.sandbox.id': sandbox.sandboxId }, async () => {
      await sandbox.files.write(`${dir}/spec.json`, JSON.stringify(spec), { user });
      try {
        await sandbox.commands.run(this.layout.command(this.c.E2B_PYTHON, 'prove', `${dir}/spec.json`), {
          user,
          envs: {},
          timeoutMs: 60_000,
        });
      } catch (e) {
        if (exitCodeOf(e) === EXIT_BUSY) return 'busy';
        throw e;
      }
      return parseReport(SetupReport, await sandbox.files.read(`${dir}/report.json`, { user }), nonce);
    });
  }

  async kill(env: E2bEnvironment, box: Sandbox, reason: string): Promise<void> {
    this.log.log(`killing sandbox ${box.sandboxId} of org ${env.org}: ${reason}`);
    await box.kill();
  }

  async keepAlive(box: Sandbox, minMs: number): Promise<void> {
    await box.setTimeout(Math.max(this.sandboxTimeoutMs, minMs));
  }

  python(env: E2bEnvironment): string {
    // Python tools run in a fork of the launcher: the launcher runs on the environment's interpreter.
    return env.requirementsHash && env.request.pip.length
      ? `${this.layout.envDir(env.requirementsHash)}/bin/python3`
      : this.c.E2B_PYTHON;
  }

  moduleDir(env: E2bEnvironment): string {
    return env.requirementsHash ? this.layout.envDir(env.requirementsHash) : this.layout.state;
  }

  async write(_env: E2bEnvironment, box: Sandbox, files: Array<{ path: string; data: string }>): Promise<void> {
    await box.files.write(files, { user: this.c.E2B_COMMAND_USER });
  }

  async start(
    _env: E2bEnvironment,
    box: Sandbox,
    command: string,
    o: { envs: Record<string, string>; timeoutMs: number; stdout: (b: Buffer) => void; stderr: (b: Buffer) => void },
  ): Promise<RunningCommand> {
    const handle = await box.commands.run(command, {
      background: true,
      user: this.c.E2B_COMMAND_USER,
      envs: o.envs,
      timeoutMs: o.timeoutMs,
      onStdout: (d) => o.stdout(Buffer.from(d, 'utf8')),
      onStderr: (d) => o.stderr(Buffer.from(d, 'utf8')),
    });
    return {
      wait: () =>
        handle.wait().then(
          () => ({ exit: 0 }),
          (e: unknown) => {
            const code = exitCodeOf(e);
            return code !== undefined ? { exit: code } : { lost: e };
          },
        ),
      stop: () => void handle.kill().catch(() => undefined),
    };
  }

  read(_env: E2bEnvironment, box: Sandbox, path: string): Promise<string> {
    return box.files.read(path, { user: this.c.E2B_COMMAND_USER });
  }

  isGone(e: unknown): boolean {
    return isSandboxGone(e);
  }

  providerError(e: unknown, env: E2bEnvironment, what: string): ToolplaneError {
    return providerError(e, env.request.account, what);
  }

  scrub(text: string, env: E2bEnvironment): string {
    return scrub(text, env.request.account);
  }

  noNode(env: E2bEnvironment): string {
    return `the E2B template ${env.request.template} has no Node (${this.c.E2B_NODE}): TypeScript/JavaScript tools cannot run on it`;
  }

  /** A sandbox request of the build: a gone sandbox or a provider failure is the build's (typed) error. */
  private async sandboxCall<T>(env: E2bEnvironment, what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof ToolplaneError) throw e;
      if (isSandboxGone(e))
        throw new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `the new E2B sandbox went away while ${what}`, {
          provider: 'e2b',
        });
      throw providerError(e, env.request.account, what);
    }
  }

  private async readReport(env: E2bEnvironment, sandbox: Sandbox, file: string, nonce: string): Promise<SetupReport> {
    const text = await this.sandboxCall(env, 'reading the setup report', () =>
      sandbox.files.read(file, { user: this.c.E2B_COMMAND_USER }),
    );
    const report = parseReport(SetupReport, text, nonce);
    if (!report)
      throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, 'the E2B sandbox setup did not report', { provider: 'e2b' });
    return report;
  }

  private pipArgs(specifiers: string[]): string[] {
    const c = this.c;
    const a = [
      'install',
      '--no-input',
      '--disable-pip-version-check',
      '--no-cache-dir',
      '--progress-bar',
      'off',
      '--prefer-binary',
    ];
    if (c.E2B_PIP_INDEX_URL) a.push('--index-url', c.E2B_PIP_INDEX_URL);
    if (c.E2B_PIP_EXTRA_INDEX_URL) a.push('--extra-index-url', c.E2B_PIP_EXTRA_INDEX_URL);
    for (const f of c.E2B_PIP_FIND_LINKS) a.push('--find-links', f);
    if (c.E2B_PIP_NO_INDEX) a.push('--no-index');
    for (const u of [c.E2B_PIP_INDEX_URL, c.E2B_PIP_EXTRA_INDEX_URL].filter(
      (x): x is string => !!x && x.startsWith('http:'),
    ))
      a.push('--trusted-host', new URL(u).host);
    return [...a, '--', ...specifiers];
  }

  private npmArgs(env: E2bEnvironment): string[] {
    const a = [
      'install',
      '--prefix',
      this.layout.envDir(env.requirementsHash!),
      '--no-audit',
      '--no-fund',
      '--no-save',
      '--no-package-lock',
      '--omit=dev',
    ];
    if (!env.request.buildScripts) a.push('--ignore-scripts');
    if (this.c.E2B_NPM_REGISTRY) a.push('--registry', this.c.E2B_NPM_REGISTRY);
    return [...a, '--', ...env.request.npm];
  }

  /** Hosts a sandbox without internet may still reach: the package indexes of its builds. */
  private indexHosts(): string[] {
    const urls = [
      this.c.E2B_PIP_INDEX_URL,
      this.c.E2B_PIP_EXTRA_INDEX_URL,
      this.c.E2B_NPM_REGISTRY,
      ...this.c.E2B_PIP_FIND_LINKS.filter((f) => /^https?:/.test(f)),
    ];
    return [...new Set(urls.filter((u): u is string => !!u && /^https?:/.test(u)).map((u) => new URL(u).hostname))];
  }
}
