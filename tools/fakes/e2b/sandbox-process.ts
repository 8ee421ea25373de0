/**
 * One process started through envd's `process.Process/Start` in a fake sandbox: spawned inside the
 * local runner's one-shot bubblewrap sandbox (`oneShotArgs`: own user/pid/mount/ipc namespaces, an
 * empty network namespace, the tool seccomp filter, no capabilities, the host's /usr read-only,
 * the sandbox's home and /tmp read-write, nothing else of the host), or as a plain child process
 * (`isolation: 'process'`, for machines without bubblewrap: no isolation at all).
 *
 * Output is fanned out to every attached stream as envd's `ProcessEvent`s (proto3 JSON: bytes are
 * base64), so `process.Process/Connect` can attach to a running process like envd allows.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { oneShotArgs } from '@toolplane/sandbox';
import { HOME } from './sandbox-files';

/** envd's `process.ProcessConfig`. */
export interface ProcessConfigJson {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

/** envd's `ProcessEvent.EndEvent`: Go's `os.ProcessState` (ExitCode(), Exited(), String()) and the Wait error. */
export interface EndEventJson {
  exitCode: number;
  exited: boolean;
  status: string;
  error?: string;
}

export type ProcessEventJson =
  | { start: { pid: number } }
  | { data: { stdout: string } | { stderr: string } }
  | { end: EndEventJson }
  | { keepalive: Record<string, never> };

export const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** How a sandbox's commands are spawned. */
export interface SpawnPlan {
  isolation: 'bwrap' | 'process';
  bwrapPath: string;
  /** The support dir of `prepareSupportDir` (bwrap only). */
  supportDir?: string;
  /** Spawn as this uid/gid (when the fake runs as root). */
  runAs?: { uid: number; gid: number };
  /** Host dirs bound at /home/user and /tmp. */
  homeHost: string;
  tmpHost: string;
  /** Host paths bound read-only at the same path. */
  readable: readonly string[];
  /** Where homeHost is bound (default E2B's /home/user). */
  homeAt?: string;
  /** More bwrap binds (another fake's own files). */
  extraBinds?: readonly string[];
}

export interface StartSpec {
  pid: number;
  config: ProcessConfigJson;
  tag?: string;
  /** The complete environment of the command (sandbox envVars < the command's envs, plus PATH and HOME). */
  env: Record<string, string>;
  /** Working directory in the sandbox, and its host path (process isolation runs there). */
  cwd: string;
  hostCwd?: string;
  stdin: boolean;
}

/** Go's names of signals (`syscall.Signal.String()`), as envd reports them in `status`. */
const GO_SIGNAL_NAMES: Partial<Record<NodeJS.Signals, string>> = {
  SIGKILL: 'killed',
  SIGTERM: 'terminated',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
  SIGQUIT: 'quit',
  SIGABRT: 'aborted',
  SIGSEGV: 'segmentation fault',
  SIGPIPE: 'broken pipe',
  SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2',
};

export class SandboxProcess {
  readonly pid: number;
  readonly config: ProcessConfigJson;
  readonly tag?: string;
  readonly done: Promise<EndEventJson>;
  result?: EndEventJson;
  private readonly listeners = new Set<(event: ProcessEventJson) => void>();
  private readonly child: ChildProcess;
  private readonly bwrap: boolean;
  /** The last signal the fake sent: the exit it causes is reported as that signal (see endEvent). */
  private signalled?: NodeJS.Signals;

  private constructor(
    spec: StartSpec,
    child: ChildProcess,
    bwrap: boolean,
    listener?: (event: ProcessEventJson) => void,
  ) {
    this.pid = spec.pid;
    this.bwrap = bwrap;
    this.config = spec.config;
    this.tag = spec.tag;
    this.child = child;
    if (listener) this.listeners.add(listener);
    child.stdout!.on('data', (b: Buffer) => this.emit({ data: { stdout: b.toString('base64') } }));
    child.stderr!.on('data', (b: Buffer) => this.emit({ data: { stderr: b.toString('base64') } }));
    child.stdin?.on('error', () => undefined); // EPIPE when the command exits before reading its stdin
    this.done = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        this.result = endEvent(code, signal, this.bwrap ? this.signalled : undefined);
        this.emit({ end: this.result });
        this.listeners.clear();
        resolve(this.result);
      });
    });
  }

  /**
   * Spawns the command; resolves once it runs (a spawn failure rejects, like envd's start error).
   * `listener` is attached before any output can arrive.
   */
  static async start(
    plan: SpawnPlan,
    spec: StartSpec,
    listener?: (event: ProcessEventJson) => void,
  ): Promise<SandboxProcess> {
    const stdio: Array<'pipe' | 'ignore'> = [spec.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'];
    const ids = plan.runAs ? { uid: plan.runAs.uid, gid: plan.runAs.gid } : {};
    let child: ChildProcess;
    if (plan.isolation === 'bwrap') {
      // bwrap runs with exactly the command's env (inheritEnv) but sets PATH and HOME itself, and
      // the confining python3 coerces the C locale by adding LC_CTYPE: /usr/bin/env puts the
      // command's own values back.
      const unset = spec.env.LC_CTYPE === undefined ? ['-u', 'LC_CTYPE'] : [];
      const command = [
        '/usr/bin/env',
        ...unset,
        `HOME=${spec.env.HOME}`,
        `PATH=${spec.env.PATH}`,
        spec.config.cmd,
        ...spec.config.args,
      ];
      const extra = [
        '--bind',
        plan.tmpHost,
        '/tmp',
        ...plan.readable.flatMap((r) => ['--ro-bind', r, r]),
        ...(plan.extraBinds ?? []),
      ];
      const args = oneShotArgs({
        supportDir: plan.supportDir!,
        writable: plan.homeHost,
        writableAt: plan.homeAt ?? HOME,
        extra,
        chdir: spec.cwd,
        inheritEnv: true,
        command,
      });
      child = spawn(plan.bwrapPath, args, { env: spec.env, stdio, detached: true, ...ids });
    } else {
      child = spawn(spec.config.cmd, spec.config.args, {
        env: spec.env,
        cwd: spec.hostCwd ?? plan.homeHost,
        stdio,
        detached: true,
        ...ids,
      });
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    return new SandboxProcess(spec, child, plan.isolation === 'bwrap', listener);
  }

  get running(): boolean {
    return this.result === undefined;
  }

  get stdinOpen(): boolean {
    return !!this.child.stdin && !this.child.stdin.writableEnded;
  }

  /** Receives every later event (until `unsubscribe`). */
  subscribe(listener: (event: ProcessEventJson) => void): void {
    if (this.running) this.listeners.add(listener);
  }

  unsubscribe(listener: (event: ProcessEventJson) => void): void {
    this.listeners.delete(listener);
  }

  /**
   * Signals the command. Under bwrap the tree is outer bwrap → the pid namespace's init (bwrap) →
   * the command: SIGKILL goes to the init, which takes the whole namespace down and lets the outer
   * bwrap exit and be reaped normally; other signals go to the command itself (envd signals the
   * process it started). Without that tree (process isolation, or a race with start/exit), the
   * whole process group gets it.
   */
  signal(signal: NodeJS.Signals): void {
    if (!this.running || this.child.pid === undefined) return;
    this.signalled = signal;
    if (this.bwrap) {
      const init = childrenOf(this.child.pid)[0];
      const target = signal === 'SIGKILL' ? init : init !== undefined ? childrenOf(init)[0] : undefined;
      if (target !== undefined && trySignal(target, signal)) return;
    }
    if (!trySignal(-this.child.pid, signal)) this.child.kill(signal);
  }

  writeStdin(data: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.child.stdin!.write(data, (e) => (e ? reject(e) : resolve())));
  }

  closeStdin(): void {
    this.child.stdin?.end();
  }

  private emit(event: ProcessEventJson): void {
    for (const listener of this.listeners) listener(event);
  }
}

/**
 * bwrap reports a command killed by signal N as exit status 128+N; when the fake sent that signal
 * it is reported the way envd sees a signalled process (exit code -1, "signal: killed").
 */
function endEvent(code: number | null, signal: NodeJS.Signals | null, sentUnderBwrap?: NodeJS.Signals): EndEventJson {
  if (code !== null && sentUnderBwrap && code === 128 + osConstants.signals[sentUnderBwrap]) {
    code = null;
    signal = sentUnderBwrap;
  }
  if (code !== null) {
    const status = `exit status ${code}`;
    return { exitCode: code, exited: true, status, ...(code !== 0 ? { error: status } : {}) };
  }
  const status = `signal: ${GO_SIGNAL_NAMES[signal!] ?? signal}`;
  return { exitCode: -1, exited: false, status, error: status };
}

/** Direct children of a process (Linux /proc/<pid>/task/<pid>/children). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function trySignal(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}
