import { Logger } from '@nestjs/common';
import { type Span } from '@opentelemetry/api';
import { inSpan } from '@toolplane/observability';
import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { DependencyInstallError, failedPackage } from '@toolplane/sandbox';
import type { Sandbox } from 'e2b';
import { createHash, randomBytes } from 'node:crypto';
import type { E2bRunnerConfig } from '../runner-e2b.config';
import { exitCodeOf, isSandboxGone, providerError, scrub, type E2bApi } from './e2b.api';
import { EXIT_BUSY, launcherBase, parseReport, proofJson, proofOf, SandboxLayout, SetupReport, SUPPORT_DIGEST, SUPPORT_FILES } from './launcher';
import { Slot, type Environment, type EnvironmentRequest, type SandboxFactory } from './sandbox-pool';


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

/** One span per step; the span carries ids and sizes, never a secret. */
export function step<T>(name: string, attributes: Record<string, string | number | boolean>, fn: (span: Span) => Promise<T>): Promise<T> {
  return inSpan('runner-e2b', name, fn, attributes);
}

const hash = (...parts: Array<string | number | boolean | null>) =>
  createHash('sha256')
    .update(parts.map((p) => String(p)).join('\0'))
    .digest('hex');

/** The keys of an environment request: its sandbox key, its family, its requirements hash (null: none). */
export function environmentKeys(deployment: string, python: string, r: EnvironmentRequest): { key: string; family: string; requirementsHash: string | null } {
  const needs = r.pip.length > 0 || r.npm.length > 0;
  const requirementsHash = needs ? hash('requirements', python, JSON.stringify([...r.pip].sort()), JSON.stringify([...r.npm].sort()), r.buildScripts).slice(0, 20) : null;
  const family = hash('family', deployment, r.org, requirementsHash).slice(0, 24);
  // The key's hash covers the org's API key (rotated key: new sandboxes), never the key itself.
  const key = hash('key', family, r.fingerprint, hash(r.account.apiKey), r.template, r.network, r.lanes, SUPPORT_DIGEST).slice(0, 24);
  return { key, family, requirementsHash };
}

/**
 * The environment store of runner-e2b: makes a sandbox for an environment (created, the harnesses
 * uploaded, its requirements installed once by the launcher, its baseline taken), finds the
 * sandboxes of earlier runner processes again by their tags, proves drained ones clean, kills.
 */
export class E2bSandboxes implements SandboxFactory {
  private readonly log = new Logger(E2bSandboxes.name);
  readonly layout: SandboxLayout;

  constructor(
    private readonly api: E2bApi,
    private readonly c: E2bRunnerConfig,
  ) {
    this.layout = new SandboxLayout(c.E2B_STATE_DIR);
  }

  /** E2B's own timeout of a sandbox: past the idle TTL, so a runner that died leaves nothing running for long. */
  get sandboxTimeoutMs(): number {
    return this.c.E2B_IDLE_TTL_MS + 60_000;
  }

  tags(env: Environment): Record<string, string> {
    return {
      [TAGS.deployment]: this.c.E2B_DEPLOYMENT,
      [TAGS.org]: env.org,
      [TAGS.family]: env.family,
      [TAGS.key]: env.key,
      [TAGS.fingerprint]: env.fingerprint ?? 'none',
      [TAGS.requirements]: env.requirementsHash ?? 'none',
      [TAGS.lanes]: String(env.lanes),
    };
  }

  async build(env: Environment, progress: (line: string) => void): Promise<Slot> {
    const attrs = { 'toolplane.org.id': env.org, 'toolplane.e2b.template': env.template, 'toolplane.e2b.environment': env.key };
    const sandbox = await step('create sandbox', attrs, async (span) => {
      try {
        const s = await this.api.create(env.account, { template: env.template, metadata: this.tags(env), timeoutMs: this.sandboxTimeoutMs, network: env.network, allowOut: this.indexHosts() });
        span.setAttribute('toolplane.sandbox.id', s.sandboxId);
        return s;
      } catch (e) {
        throw providerError(e, env.account, 'creating a sandbox');
      }
    });
    try {
      return await this.setUp(env, sandbox, progress);
    } catch (e) {
      await sandbox.kill().catch(() => undefined);
      throw e;
    }
  }

  private async setUp(env: Environment, sandbox: Sandbox, progress: (line: string) => void): Promise<Slot> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`setup-${nonce}`);
    const user = this.c.E2B_COMMAND_USER;
    const specs = [...env.pip, ...env.npm];
    const spec = {
      ...launcherBase(this.c, this.layout),
      nonce,
      report: `${dir}/report.json`,
      lanes: env.lanes,
      env_dir: env.requirementsHash ? this.layout.envDir(env.requirementsHash) : null,
      requirements_hash: env.requirementsHash,
      pip_args: env.pip.length ? this.pipArgs(env.pip) : null,
      npm_args: env.npm.length ? this.npmArgs(env) : null,
      npm: this.c.E2B_NPM,
      build_timeout_ms: this.c.E2B_BUILD_TIMEOUT_MS,
    };
    const attrs = { 'toolplane.sandbox.id': sandbox.sandboxId, 'toolplane.e2b.environment': env.key };
    await step('upload harness', attrs, () =>
      this.sandboxCall(env, 'uploading the harness', () =>
        sandbox.files.write([...SUPPORT_FILES.map((f) => ({ path: this.layout.file(f.name), data: f.data.toString('utf8') })), { path: `${dir}/spec.json`, data: JSON.stringify(spec) }], { user }),
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
          throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the E2B sandbox could not be set up (the launcher exited with ${code}): ${scrub(String((e as { stderr?: string }).stderr ?? '').slice(-500), env.account)}`, { provider: 'e2b' });
        }
      }),
    );
    const report = await step('read setup report', attrs, () => this.readReport(env, sandbox, `${dir}/report.json`, nonce));
    if (report.install && !report.install.ok) {
      const output = (report.install.output ?? []).join('\n');
      const errors = output.split('\n').filter((l) => /^ERROR:|^npm (ERR|error)/.test(l));
      const message = report.install.timed_out ? `${report.install.tool} did not finish within ${this.c.E2B_BUILD_TIMEOUT_MS} ms` : (errors.length ? errors.join('\n') : output.split('\n').slice(-10).join('\n')).slice(0, 4000);
      throw new DependencyInstallError(failedPackage(output, specs), message);
    }
    const proof = proofOf(report);
    if (!proof) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the E2B sandbox could not be set up: ${report.dirty.join('; ') || 'no proof'}`, { provider: 'e2b' });
    if (report.python === false) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, `the E2B template ${env.template} has no ${this.c.E2B_PYTHON} (E2B_PYTHON)`, { provider: 'e2b' });
    this.log.log(`sandbox ${sandbox.sandboxId} ready for org ${env.org} (environment ${env.key}${specs.length ? `, ${specs.length} requirement(s)` : ''})`);
    return new Slot(sandbox, env, proof, report.node === true);
  }

  async discover(env: Environment): Promise<Slot[]> {
    const infos = await step('find sandboxes', { 'toolplane.org.id': env.org, 'toolplane.e2b.environment': env.key }, async () => {
      try {
        return await this.api.list(env.account, { [TAGS.deployment]: this.c.E2B_DEPLOYMENT, [TAGS.family]: env.family });
      } catch (e) {
        throw providerError(e, env.account, 'listing sandboxes');
      }
    });
    const adopted: Slot[] = [];
    for (const info of infos) {
      const m = info.metadata ?? {};
      if (m[TAGS.org] !== env.org) continue;
      if (m[TAGS.fingerprint] !== (env.fingerprint ?? 'none')) {
        // Made under another sandbox config of the org: superseded.
        this.log.log(`sandbox ${info.sandboxId} of org ${env.org} has an older sandbox config: killing it`);
        await this.api.kill(env.account, info.sandboxId).catch(() => undefined);
        continue;
      }
      if (m[TAGS.key] !== env.key || env.lanes !== 1) continue;
      const slot = await this.adopt(env, info.sandboxId).catch((e: Error) => {
        this.log.warn(`sandbox ${info.sandboxId} could not be taken over: ${scrub(e.message, env.account)}`);
        return undefined;
      });
      if (slot) adopted.push(slot);
    }
    return adopted;
  }

  /** Connects to a sandbox an earlier runner made and proves it clean from its own last proof; undefined when another replica uses it. */
  private async adopt(env: Environment, sandboxId: string): Promise<Slot | undefined> {
    const sandbox = await this.api.connect(env.account, sandboxId, this.sandboxTimeoutMs);
    const r = await this.runProve(env, sandbox, { from_state: true });
    if (r === 'busy') return undefined;
    const proof = r && proofOf(r);
    if (!r || !proof) {
      this.log.log(`sandbox ${sandboxId} could not prove itself clean (${r ? r.dirty.join('; ') : 'no report'}): killing it`);
      await sandbox.kill().catch(() => undefined);
      return undefined;
    }
    this.log.log(`sandbox ${sandboxId} of org ${env.org} taken over (found by its tags)`);
    return new Slot(sandbox, env, proof, r.node === true);
  }

  async prove(slot: Slot): Promise<boolean> {
    const r = await this.runProve(slot.env, slot.sandbox, { proof: proofJson(slot.proof) });
    const proof = r && r !== 'busy' ? proofOf(r) : undefined;
    if (!proof) return false;
    slot.proof = proof;
    return true;
  }

  private async runProve(env: Environment, sandbox: Sandbox, extra: Record<string, unknown>): Promise<SetupReport | 'busy' | undefined> {
    const nonce = randomBytes(16).toString('hex');
    const dir = this.layout.callDir(`prove-${nonce}`);
    const user = this.c.E2B_COMMAND_USER;
    const spec = { ...launcherBase(this.c, this.layout), ...extra, nonce, report: `${dir}/report.json`, lanes: env.lanes, env_dir: env.requirementsHash ? this.layout.envDir(env.requirementsHash) : null };
    return step('prove sandbox', { 'toolplane.sandbox.id': sandbox.sandboxId }, async () => {
      await sandbox.files.write(`${dir}/spec.json`, JSON.stringify(spec), { user });
      try {
        await sandbox.commands.run(this.layout.command(this.c.E2B_PYTHON, 'prove', `${dir}/spec.json`), { user, envs: {}, timeoutMs: 60_000 });
      } catch (e) {
        if (exitCodeOf(e) === EXIT_BUSY) return 'busy';
        throw e;
      }
      return parseReport(SetupReport, await sandbox.files.read(`${dir}/report.json`, { user }), nonce);
    });
  }

  async kill(slot: Slot, reason: string): Promise<void> {
    this.log.log(`killing sandbox ${slot.id} of org ${slot.env.org}: ${reason}`);
    await slot.sandbox.kill();
  }

  async keepAlive(slot: Slot, minMs = 0): Promise<void> {
    await slot.sandbox.setTimeout(Math.max(this.sandboxTimeoutMs, minMs));
  }

  /** A sandbox request of the build: a gone sandbox or a provider failure is the build's (typed) error. */
  private async sandboxCall<T>(env: Environment, what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof ToolplaneError) throw e;
      if (isSandboxGone(e)) throw new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, `the new E2B sandbox went away while ${what}`, { provider: 'e2b' });
      throw providerError(e, env.account, what);
    }
  }

  private async readReport(env: Environment, sandbox: Sandbox, file: string, nonce: string): Promise<SetupReport> {
    const text = await this.sandboxCall(env, 'reading the setup report', () => sandbox.files.read(file, { user: this.c.E2B_COMMAND_USER }));
    const report = parseReport(SetupReport, text, nonce);
    if (!report) throw new ToolplaneError(ErrorCode.SANDBOX_FAILURE, 'the E2B sandbox setup did not report', { provider: 'e2b' });
    return report;
  }

  private pipArgs(specifiers: string[]): string[] {
    const c = this.c;
    const a = ['install', '--no-input', '--disable-pip-version-check', '--no-cache-dir', '--progress-bar', 'off', '--prefer-binary'];
    if (c.E2B_PIP_INDEX_URL) a.push('--index-url', c.E2B_PIP_INDEX_URL);
    if (c.E2B_PIP_EXTRA_INDEX_URL) a.push('--extra-index-url', c.E2B_PIP_EXTRA_INDEX_URL);
    for (const f of c.E2B_PIP_FIND_LINKS) a.push('--find-links', f);
    if (c.E2B_PIP_NO_INDEX) a.push('--no-index');
    for (const u of [c.E2B_PIP_INDEX_URL, c.E2B_PIP_EXTRA_INDEX_URL].filter((x): x is string => !!x && x.startsWith('http:'))) a.push('--trusted-host', new URL(u).host);
    return [...a, '--', ...specifiers];
  }

  private npmArgs(env: Environment): string[] {
    const a = ['install', '--prefix', this.layout.envDir(env.requirementsHash!), '--no-audit', '--no-fund', '--no-save', '--no-package-lock', '--omit=dev'];
    if (!env.buildScripts) a.push('--ignore-scripts');
    if (this.c.E2B_NPM_REGISTRY) a.push('--registry', this.c.E2B_NPM_REGISTRY);
    return [...a, '--', ...env.npm];
  }

  /** Hosts a sandbox without internet may still reach: the package indexes of its builds. */
  private indexHosts(): string[] {
    const urls = [this.c.E2B_PIP_INDEX_URL, this.c.E2B_PIP_EXTRA_INDEX_URL, this.c.E2B_NPM_REGISTRY, ...this.c.E2B_PIP_FIND_LINKS.filter((f) => /^https?:/.test(f))];
    return [...new Set(urls.filter((u): u is string => !!u && /^https?:/.test(u)).map((u) => new URL(u).hostname))];
  }
}
