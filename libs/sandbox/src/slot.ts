import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { SecretMasker } from '@toolplane/platform';
import { closeFds, type SlotCgroup } from './cgroups';
import type { SlirpHandle } from './network';
import { completeUtf8Length, OutputCapture } from './output-capture';
import { failed, fromChannel, pipesClosed, type RunError, type RunResult } from './outcome';

/** Hex sentinel the slot writes last on stdout, stderr and the result channel after each call. */
const SENTINEL_LEN = 48;
const PIPE_GRACE_MS = 500;
const READY_TIMEOUT_MS = 15_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface SlotSpawn {
  bwrapPath: string;
  /** bwrap arguments; they name the fds below by number (see `slotFds`). */
  args: string[];
  uid?: number;
  gid?: number;
  /** The slot's cgroup and its `cgroup.procs` fds (passed as fds 5…, closed here once spawned). */
  cgroup?: SlotCgroup;
  cgroupFds?: number[];
  /** Network-enabled slots: attaches the outside to the network namespace the slot made (host pid of the slot). */
  attachNetwork?: (pid: number) => Promise<SlirpHandle>;
}

/** Fd numbers of a slot's extra channels: cgroup.procs files from 5, then (network) bwrap's info fd and the "network attached" fd. */
export function slotFds(cgroupFds: number, network: boolean): { cgroup: number[]; info?: number; go?: number } {
  const cgroup = Array.from({ length: cgroupFds }, (_, i) => 5 + i);
  return network ? { cgroup, info: 5 + cgroupFds, go: 6 + cgroupFds } : { cgroup };
}

/** What the slot applies in the child before the tool runs (slot.py `_set_limits`). */
export interface SlotLimits {
  memory_bytes: number;
  cpu_seconds: number;
  processes: number;
  open_files: number;
  file_bytes: number;
  work_bytes: number;
}

export interface SlotCall {
  /** The job JSON the child reads: {nonce, env, limits: SlotLimits, source, function, args, agent_id}. */
  job: Buffer;
  /** Limits of the call's cgroup (when the slot has one). */
  cgroupLimits?: { memoryBytes: number; processes: number };
  /** Secret values masked in stdout/stderr before they are cut (and in the result, in the driver). */
  masker?: SecretMasker;
  nonce: string;
  functionName: string;
  timeoutMs: number;
  stdoutBytes: number;
  stderrBytes: number;
  maxOutputBytes: number;
  maxResultBytes: number;
}

/**
 * First `limit` bytes of a stream that ends with the slot's sentinel; the sentinel is not tool
 * output. With a masker, `lookahead` more bytes are kept so that a secret straddling the cut is
 * masked whole before the text is cut.
 */
class SplitStream {
  readonly capture: OutputCapture;
  private tail = Buffer.alloc(0);

  constructor(
    private readonly limit: number,
    private readonly lookahead = 0,
  ) {
    this.capture = new OutputCapture(limit + lookahead + SENTINEL_LEN);
  }

  push(chunk: Buffer): void {
    this.capture.push(chunk);
    const joined = Buffer.concat([this.tail, chunk.length > SENTINEL_LEN ? chunk.subarray(-SENTINEL_LEN) : chunk]);
    this.tail = Buffer.from(joined.subarray(-SENTINEL_LEN));
  }

  endsWith(sentinel: Buffer): boolean {
    return this.tail.equals(sentinel);
  }

  /** Tool bytes only: `ended` says the sentinel was seen (else all bytes so far are the tool's). */
  toolBytes(ended: boolean, extra = 0): { bytes: Buffer; total: number; truncated: boolean } {
    const total = Math.max(0, this.capture.total - (ended ? SENTINEL_LEN : 0));
    const kept = this.capture.bytes().subarray(0, Math.min(total, this.limit + extra));
    return { bytes: kept, total, truncated: total > this.limit + extra };
  }

  text(ended: boolean, masker?: SecretMasker): { text: string; truncated: boolean } {
    if (masker?.active) {
      // Mask first, then cut: the kept bytes reach `lookahead` past the limit.
      const { bytes, truncated } = this.toolBytes(ended, this.lookahead);
      const text = new TextDecoder('utf-8').decode(truncated ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes);
      return masker.maskedPrefix(text, this.limit, truncated);
    }
    const { bytes, truncated } = this.toolBytes(ended);
    return {
      text: new TextDecoder('utf-8').decode(truncated ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes),
      truncated,
    };
  }
}

interface CallState {
  call: SlotCall;
  out: SplitStream;
  err: SplitStream;
  res: SplitStream;
  sentinel?: Buffer;
  exit?: { exit: number | null; signal: string | null };
  stop?: RunError;
  /** The outcome was handed to the caller (early, from the result frame, or at the end). */
  replied: boolean;
  /** An early reply is scheduled (setImmediate) after a result line arrived. */
  earlyScheduled: boolean;
  reply: (r: RunResult) => void;
  /** The call is over (sentinel seen on every stream, or the sandbox is gone): the slot is free. */
  finish: () => void;
  timer: NodeJS.Timeout;
}

/**
 * One warm sandbox: a bwrap process whose pid 1 is python/slot.py, serving one call at a time.
 * A call that ends normally leaves the slot reusable (every process of the call killed, the work
 * dir unmounted); a call that is stopped (timeout, abort, output limit) kills the whole sandbox.
 *
 * Two moments per call: the reply (`run()` resolves) and the end (`idle()` resolves). The reply
 * comes as soon as the result channel holds exactly one well-formed frame with the call's nonce
 * (checked one event-loop turn later, so stdout/stderr bytes written before the frame have been
 * read): the interpreter's exit, the kill of the call's other processes and the sentinel are then
 * off the reply's critical path. Until the end the call still owns the slot: bytes arriving after
 * the reply are counted and dropped (never attributed to another call), output limits and the
 * timeout still kill the slot, and the slot takes no other call. Anything unusual (no frame, two
 * frames, a foreign nonce, bytes after the frame) waits for the end and is judged as before.
 */
export class Slot {
  readonly ready: Promise<void>;
  lastUsed = Date.now();
  dead = false;
  /** The slot's next child is confined, warmed and waiting for its job (a call now starts at once). */
  childReady = false;
  python = '';
  /** Why the slot could not prove itself clean after a call (it then exits and is never reused). */
  dirty?: string;
  /** Calls this slot has taken. */
  calls = 0;
  private readonly proc: ChildProcess;
  private readonly cgroup?: SlotCgroup;
  private slirp?: SlirpHandle;
  private hostPid?: number;
  private readonly attachNetwork?: (pid: number) => Promise<SlirpHandle>;
  private go?: Writable;
  private readonly ctrlIn: Writable;
  private current?: CallState;
  private ctrlBuf = Buffer.alloc(0);
  private bootErr = '';
  private readyResolve!: () => void;
  private readyReject!: (e: Error) => void;
  private readonly exited: Promise<void>;
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly key: string,
    spawnSpec: SlotSpawn,
  ) {
    this.ready = new Promise((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    this.ready.catch(() => undefined);
    this.cgroup = spawnSpec.cgroup;
    this.attachNetwork = spawnSpec.attachNetwork;
    const cgroupFds = spawnSpec.cgroupFds ?? [];
    try {
      this.proc = spawn(spawnSpec.bwrapPath, spawnSpec.args, {
        stdio: [
          'pipe',
          'pipe',
          'pipe',
          'pipe',
          'pipe',
          ...cgroupFds,
          ...(this.attachNetwork ? (['pipe', 'pipe'] as const) : []),
        ],
        env: { PATH: '/usr/bin:/bin' },
        detached: true,
        ...(spawnSpec.uid !== undefined ? { uid: spawnSpec.uid, gid: spawnSpec.gid } : {}),
      });
    } finally {
      closeFds(cgroupFds); // the slot holds them now (and writes itself into its cgroup)
    }
    if (this.attachNetwork) {
      const info = this.proc.stdio[5 + cgroupFds.length] as Readable;
      this.go = this.proc.stdio[6 + cgroupFds.length] as Writable;
      this.go.on('error', () => undefined);
      let text = '';
      info.on('error', () => undefined);
      info.on('data', (d: Buffer) => {
        text += d.toString();
        const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
        if (pid && this.hostPid === undefined) this.hostPid = Number(pid);
      });
    }
    this.ctrlIn = this.proc.stdin!;
    this.ctrlIn.on('error', () => undefined);
    const [, out, err, res, ctrl] = this.proc.stdio as [unknown, Readable, Readable, Readable, Readable];
    out.on('data', (c: Buffer) => this.onData('out', c));
    err.on('data', (c: Buffer) => this.onData('err', c));
    res.on('data', (c: Buffer) => this.onData('res', c));
    ctrl.on('data', (c: Buffer) => this.onControl(c));
    for (const s of [out, err, res, ctrl]) s.on('error', () => undefined);
    const bootTimer = setTimeout(
      () => this.fail(new Error(`the sandbox did not start within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    this.ready.then(
      () => clearTimeout(bootTimer),
      () => clearTimeout(bootTimer),
    );
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, sig) => {
        this.dead = true;
        this.slirp?.stop();
        this.readyReject(
          new Error(
            `the sandbox exited (${sig ?? code}) before it was ready: ${this.bootErr.trim().slice(0, 2000) || 'no message'}`,
          ),
        );
        void pipesClosed([out, err, res], PIPE_GRACE_MS).then(() => {
          this.onExit();
          void this.cgroup?.remove();
        });
        resolve();
      });
      this.proc.once('error', (e) => {
        this.dead = true;
        void this.cgroup?.remove();
        this.readyReject(e);
        this.onExit();
        resolve();
      });
    });
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Resolves when no call holds the slot (after the sentinel of the current one, or its death). */
  idle(): Promise<void> {
    if (!this.current) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  run(call: SlotCall, caller?: AbortSignal, closing?: AbortSignal): Promise<RunResult> {
    if (this.dead || this.current)
      return Promise.resolve(failed('spawn_failed', 'SpawnError', 'the sandbox slot is not available'));
    try {
      if (call.cgroupLimits) this.cgroup?.apply(call.cgroupLimits);
    } catch (e) {
      void this.kill();
      return Promise.resolve(
        failed('spawn_failed', 'SpawnError', `cannot set the call's cgroup limits: ${(e as Error).message}`),
      );
    }
    this.calls++;
    const lookahead = call.masker?.lookaheadBytes ?? 0;
    return new Promise((resolve) => {
      const timer = setTimeout(
        () =>
          this.stop({
            kind: 'timeout',
            type: 'TimeoutError',
            message: `Function ${call.functionName} timed out after ${call.timeoutMs} ms`,
          }),
        Math.min(Math.max(call.timeoutMs, 0), MAX_TIMER_MS),
      );
      const onCaller = (): void =>
        this.stop({ kind: 'timeout', type: 'AbortError', message: 'the run was aborted by the caller' });
      const onClosing = (): void =>
        this.stop({ kind: 'crashed', type: 'SandboxClosed', message: 'the sandbox driver was closed during the run' });
      caller?.addEventListener('abort', onCaller, { once: true });
      closing?.addEventListener('abort', onClosing, { once: true });
      const state: CallState = {
        call,
        out: new SplitStream(call.stdoutBytes, lookahead),
        err: new SplitStream(call.stderrBytes, lookahead),
        res: new SplitStream(call.maxResultBytes),
        timer,
        replied: false,
        earlyScheduled: false,
        reply: (r) => {
          if (state.replied) return;
          state.replied = true;
          resolve(r);
        },
        finish: () => {
          this.cgroup?.takeOomKills(); // what this call caused is its own
          clearTimeout(timer);
          caller?.removeEventListener('abort', onCaller);
          closing?.removeEventListener('abort', onClosing);
          this.lastUsed = Date.now();
          if (this.current === state) this.current = undefined;
          for (const w of this.idleWaiters.splice(0)) w();
        },
      };
      this.current = state;
      this.childReady = false;
      this.ctrlIn.write(Buffer.concat([u32(call.job.length), call.job]));
    });
  }

  /** Kills the sandbox (every process in it) and waits for its bwrap process to exit. */
  async kill(): Promise<void> {
    this.dead = true;
    this.slirp?.stop();
    if (this.proc.pid !== undefined && this.proc.exitCode === null && this.proc.signalCode === null) {
      try {
        process.kill(-this.proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await this.exited;
  }

  private stop(reason: RunError): void {
    const c = this.current;
    if (!c || c.stop) return;
    c.stop = reason;
    void this.kill();
  }

  private fail(e: Error): void {
    this.readyReject(e);
    void this.kill();
  }

  private onData(stream: 'out' | 'err' | 'res', chunk: Buffer): void {
    const c = this.current;
    if (!c) {
      if (stream === 'err') this.bootErr = (this.bootErr + chunk.toString()).slice(-4000);
      else if (this.python) void this.kill(); // bytes outside a call: never trust this slot again
      return;
    }
    const s = c[stream];
    s.push(chunk);
    if (stream === 'res' && !c.earlyScheduled && chunk.includes(10)) {
      c.earlyScheduled = true;
      setImmediate(() => this.maybeReplyEarly(c));
    }
    if (stream === 'res' && s.capture.total > c.call.maxResultBytes + SENTINEL_LEN) {
      this.stop({
        kind: 'output_limit',
        type: 'OutputLimitExceeded',
        message: `the result is larger than ${c.call.maxResultBytes} bytes`,
      });
    } else if (
      stream !== 'res' &&
      c.out.capture.total + c.err.capture.total > c.call.maxOutputBytes + 2 * SENTINEL_LEN
    ) {
      this.stop({
        kind: 'output_limit',
        type: 'OutputLimitExceeded',
        message: `the tool wrote more than ${c.call.maxOutputBytes} bytes of output`,
      });
    }
    this.maybeComplete();
  }

  private onControl(chunk: Buffer): void {
    this.ctrlBuf = Buffer.concat([this.ctrlBuf, chunk]);
    while (this.ctrlBuf.length >= 4) {
      const len = this.ctrlBuf.readUInt32BE(0);
      if (this.ctrlBuf.length < 4 + len) return;
      const body = this.ctrlBuf.subarray(4, 4 + len);
      this.ctrlBuf = this.ctrlBuf.subarray(4 + len);
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      } catch {
        void this.kill();
        return;
      }
      if (msg.ready === true) {
        this.python = String(msg.python ?? '');
        if (this.cgroup) this.cgroup.baseline = this.cgroup.residentBytes();
        this.readyResolve();
      } else if (msg.netns === true && this.attachNetwork && !this.slirp && !this.python) {
        void this.onNetns();
      } else if (msg.child === 'ready') {
        this.childReady = true;
      } else if (this.current && typeof msg.sentinel === 'string') {
        if (typeof msg.dirty === 'string') {
          // Not provably clean: never reused (the slot exits on its own; kill() makes sure).
          this.dirty = msg.dirty;
          this.dead = true;
        }
        this.current.sentinel = Buffer.from(msg.sentinel, 'ascii');
        this.current.exit = {
          exit: typeof msg.exit === 'number' ? msg.exit : null,
          signal: typeof msg.signal === 'string' ? msg.signal : null,
        };
        this.maybeComplete();
      }
    }
  }

  /** The slot made its network namespace: attach slirp4netns to it, then let the slot go on. */
  private async onNetns(): Promise<void> {
    try {
      for (let i = 0; this.hostPid === undefined && i < 200; i++) await new Promise((r) => setTimeout(r, 5));
      if (this.hostPid === undefined) throw new Error('bwrap did not report the sandbox pid');
      this.slirp = await this.attachNetwork!(this.hostPid);
      if (this.dead) this.slirp.stop();
      this.go!.end('g');
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private maybeComplete(): void {
    const c = this.current;
    if (!c?.sentinel || c.stop) return;
    if (!c.out.endsWith(c.sentinel) || !c.err.endsWith(c.sentinel) || !c.res.endsWith(c.sentinel)) return;
    if (!c.replied) {
      const base = this.streams(c, true, c.exit!.exit, c.exit!.signal);
      const res = c.res.toolBytes(true);
      c.reply(this.memoryVerdict(fromChannel(res.bytes, c.call.nonce, base)));
    }
    if (this.dirty) void this.kill();
    c.finish();
  }

  /** A call whose interpreter was killed while its cgroup ran out of memory hit its memory limit. */
  private memoryVerdict(r: RunResult): RunResult {
    if (r.error?.kind !== 'crashed' || !this.cgroup || this.cgroup.takeOomKills() === 0) return r;
    return {
      ...r,
      error: {
        kind: 'crashed',
        type: 'MemoryLimitExceeded',
        message: 'the call used more memory than its limit allows: the kernel stopped it (out of memory in its cgroup)',
      },
    };
  }

  /**
   * Replies from the result frame before the interpreter has exited, when the result channel holds
   * exactly one line that is a well-formed frame of this call. Runs one event-loop turn after that
   * line was read: every byte written to stdout/stderr before the frame was readable when the frame
   * was, so it has been read in the same poll phase. The slot writes its control frame before any
   * sentinel byte, so while `sentinel` is unknown no stream holds sentinel bytes; once it is known
   * the end is moments away and the normal path replies.
   */
  private maybeReplyEarly(c: CallState): void {
    if (this.current !== c || c.replied || c.stop || c.sentinel) return;
    const raw = c.res.toolBytes(false).bytes;
    if (raw.indexOf(10) !== raw.length - 1) return; // not exactly one line (yet): judged at the end
    const r = fromChannel(raw, c.call.nonce, this.streams(c, false, null, null));
    if (r.status === 'success' || r.error?.kind === 'exception') c.reply(r);
  }

  private onExit(): void {
    const c = this.current;
    if (!c) return;
    const code = this.proc.exitCode;
    const sig = this.proc.signalCode;
    const stop = c.stop ?? {
      kind: 'crashed' as const,
      type: 'SandboxCrashed',
      message: `the sandbox ended (${sig ?? `exit ${code}`}) before the call finished`,
    };
    const r: RunResult = { status: 'error', error: stop, ...this.streams(c, false, null, 'SIGKILL') };
    c.reply(c.stop ? r : this.memoryVerdict(r));
    c.finish();
  }

  private streams(
    c: CallState,
    ended: boolean,
    exitCode: number | null,
    signal: string | null,
  ): Omit<RunResult, 'status' | 'value' | 'error'> {
    const out = c.out.text(ended, c.call.masker);
    const err = c.err.text(ended, c.call.masker);
    return {
      stdout: out.text,
      stderr: err.text,
      stdoutTruncated: out.truncated,
      stderrTruncated: err.truncated,
      exitCode,
      signal,
    };
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}
