/**
 * One fake E2B sandbox: its control-plane record (template, metadata, env vars, access token,
 * expiry), its filesystem (host dirs bound as /home/user and /tmp), its running processes and the
 * envd streams open to it — so killing or pausing it can end all of them the way a VM that goes
 * away would.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ServerStream } from './connect-protocol';
import { HOME, SandboxFiles } from './sandbox-files';
import type { SandboxProcess, SpawnPlan } from './sandbox-process';

export type SandboxState = 'running' | 'paused';

export interface SandboxSpec {
  templateId: string;
  alias?: string;
  metadata: Record<string, string>;
  envVars: Record<string, string>;
  /** Seconds until the sandbox expires. */
  timeoutS: number;
  /** On expiry: pause (keep the files) instead of killing. */
  autoPause: boolean;
  /** Whether envd requires the access token (v2 always; v1 only with `secure`). */
  secure: boolean;
  allowInternetAccess?: boolean;
}

/** E2B sandbox ids: 20 lowercase alphanumerics. */
export function newSandboxId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(20)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** Host files under /etc that every command sandbox binds read-only (see oneShotArgs). */
const HOST_ETC = ['/etc/ssl', '/etc/ca-certificates', '/etc/nsswitch.conf', '/etc/ld.so.cache', '/etc/alternatives'];

/** Longest single timer Node allows; longer timeouts re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class FakeSandbox {
  readonly sandboxId = newSandboxId();
  readonly startedAt = new Date();
  readonly envdAccessToken?: string;
  readonly files: SandboxFiles;
  readonly processes = new Map<number, SandboxProcess>();
  readonly plan: SpawnPlan;
  endAt: Date;
  state: SandboxState = 'running';
  /** Killed (by the API, expiry or a fault): gone for good. */
  dead = false;
  private readonly streams = new Set<ServerStream>();
  private nextPid = 400;
  private timer?: NodeJS.Timeout;

  private constructor(
    readonly spec: SandboxSpec,
    /** The sandbox's host dir (removed when it is killed). */
    readonly dir: string,
    plan: Omit<SpawnPlan, 'homeHost' | 'tmpHost'>,
    private readonly onExpire: (sandbox: FakeSandbox) => void,
  ) {
    this.plan = { ...plan, homeHost: path.join(dir, 'home'), tmpHost: path.join(dir, 'tmp') };
    this.envdAccessToken = spec.secure ? randomBytes(24).toString('hex') : undefined;
    this.files = new SandboxFiles(
      [
        { at: HOME, host: this.plan.homeHost, writable: true },
        { at: '/tmp', host: this.plan.tmpHost, writable: true },
        { at: '/usr', host: '/usr', writable: false },
        // What oneShotArgs binds of /etc too, so the files API sees what commands see.
        ...HOST_ETC.filter((p) => existsSync(p)).map((p) => ({ at: p, host: p, writable: false })),
        ...plan.readable.map((r) => ({ at: r, host: r, writable: false })),
      ],
      plan.runAs,
    );
    this.endAt = new Date(Date.now() + spec.timeoutS * 1000);
    this.arm();
  }

  static async create(
    spec: SandboxSpec,
    workDir: string,
    plan: Omit<SpawnPlan, 'homeHost' | 'tmpHost'>,
    onExpire: (sandbox: FakeSandbox) => void,
  ): Promise<FakeSandbox> {
    const dir = path.join(workDir, `sbx-${randomBytes(6).toString('hex')}`);
    // The sandbox dir itself stays root's (traversable): its commands see only home and tmp.
    await fs.mkdir(dir, { mode: 0o711 });
    for (const sub of ['home', 'tmp']) {
      const p = path.join(dir, sub);
      await fs.mkdir(p, { mode: 0o700 });
      if (plan.runAs) await fs.chown(p, plan.runAs.uid, plan.runAs.gid);
    }
    return new FakeSandbox(spec, dir, plan, onExpire);
  }

  get running(): boolean {
    return this.state === 'running' && !this.dead;
  }

  allocatePid(): number {
    return this.nextPid++;
  }

  /** Expire `seconds` from now (POST /sandboxes/{id}/timeout overwrites the TTL). */
  setTimeoutS(seconds: number): void {
    this.endAt = new Date(Date.now() + seconds * 1000);
    this.arm();
  }

  /** Connect only ever extends the TTL of a running sandbox. */
  extendTimeoutS(seconds: number): void {
    const candidate = Date.now() + seconds * 1000;
    if (candidate > this.endAt.getTime()) this.setTimeoutS(seconds);
  }

  /** An envd stream to cut when the sandbox goes away; forgotten when it closes. */
  trackStream(stream: ServerStream): void {
    this.streams.add(stream);
    stream.onClose(() => this.streams.delete(stream));
  }

  /** Kills every process and cuts every open envd connection (the VM stopped). */
  async stopEverything(): Promise<void> {
    const processes = [...this.processes.values()];
    for (const p of processes) p.signal('SIGKILL');
    await Promise.all([...this.streams].map((s) => s.destroy()));
    await Promise.all(processes.map((p) => p.done));
    this.processes.clear();
  }

  async pause(): Promise<void> {
    this.state = 'paused';
    this.disarm();
    await this.stopEverything();
  }

  resume(timeoutS: number): void {
    this.state = 'running';
    this.setTimeoutS(timeoutS);
  }

  /** Kills it for good: processes, connections, files. */
  async destroy(): Promise<void> {
    this.dead = true;
    this.disarm();
    await this.stopEverything();
    await fs.rm(this.dir, { recursive: true, force: true });
  }

  private arm(): void {
    this.disarm();
    const delay = Math.max(0, this.endAt.getTime() - Date.now());
    this.timer = setTimeout(
      () => (Date.now() >= this.endAt.getTime() ? this.onExpire(this) : this.arm()),
      Math.min(delay, MAX_TIMER_MS),
    );
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
