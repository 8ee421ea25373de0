/**
 * The development supervisor of `npm start`: keeps each service running the way Kubernetes keeps a
 * pod's container running. A service that exits is started again after a back-off that doubles
 * with each crash (base → max, reset once it has run `stableAfterMs`); one that crashes
 * `maxCrashes` times within `windowMs` is crash-looping: the supervisor gives up, says which
 * service, and the caller stops the stack. Ctrl+C (stopAll) stops everything without restarts.
 */
import type { ChildProcess } from 'node:child_process';

export interface SupervisorOptions {
  /** First restart delay; doubles per crash in a row up to backoffMaxMs. */
  backoffMs: number;
  backoffMaxMs: number;
  /** This many crashes of one service within windowMs: it crash-loops, stop the stack. */
  maxCrashes: number;
  windowMs: number;
  /** A run this long resets the back-off (the service was healthy in between). */
  stableAfterMs: number;
  say: (line: string) => void;
  /** Called once when a service crash-loops, with its name and the reason (the caller stops the stack). */
  onCrashLoop: (name: string, reason: string) => void;
}

export const DEFAULT_SUPERVISOR_OPTIONS = {
  backoffMs: 1000,
  backoffMaxMs: 30_000,
  maxCrashes: 5,
  windowMs: 60_000,
  stableAfterMs: 30_000,
};

interface Service {
  name: string;
  start: () => ChildProcess;
  proc?: ChildProcess;
  startedAt: number;
  crashes: number[];
  inARow: number;
  restartTimer?: NodeJS.Timeout;
}

export class Supervisor {
  private readonly services = new Map<string, Service>();
  private stopping = false;

  constructor(private readonly opts: SupervisorOptions) {}

  /** Starts `name` now (through `start`), and again whenever it exits until stopAll. */
  add(name: string, start: () => ChildProcess): ChildProcess {
    const svc: Service = { name, start, startedAt: 0, crashes: [], inARow: 0 };
    this.services.set(name, svc);
    return this.launch(svc);
  }

  /** The live process of a service (undefined while it waits to restart). */
  processOf(name: string): ChildProcess | undefined {
    const p = this.services.get(name)?.proc;
    return p && p.exitCode === null && p.signalCode === null ? p : undefined;
  }

  /** Stops every service (SIGTERM, SIGKILL after graceMs), in reverse order of start; no restarts after. */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    const procs: ChildProcess[] = [];
    for (const svc of [...this.services.values()].reverse()) {
      clearTimeout(svc.restartTimer);
      if (svc.proc && svc.proc.exitCode === null && svc.proc.signalCode === null) procs.push(svc.proc);
    }
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            const t = setTimeout(() => p.kill('SIGKILL'), graceMs);
            p.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            p.kill('SIGTERM');
          }),
      ),
    );
  }

  private launch(svc: Service): ChildProcess {
    const proc = svc.start();
    svc.proc = proc;
    svc.startedAt = Date.now();
    proc.once('exit', (code, signal) => this.exited(svc, proc, code, signal));
    return proc;
  }

  private exited(svc: Service, proc: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping || svc.proc !== proc) return;
    const now = Date.now();
    svc.crashes = [...svc.crashes.filter((t) => now - t < this.opts.windowMs), now];
    svc.inARow = now - svc.startedAt >= this.opts.stableAfterMs ? 1 : svc.inARow + 1;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (svc.crashes.length >= this.opts.maxCrashes) {
      const reason = `${svc.name} is crash-looping: it exited ${svc.crashes.length} times within ${Math.round(this.opts.windowMs / 1000)} s (last: ${how})`;
      this.opts.say(`${reason}; stopping the stack`);
      this.stopping = true;
      this.opts.onCrashLoop(svc.name, reason);
      return;
    }
    const delay = Math.min(this.opts.backoffMaxMs, this.opts.backoffMs * 2 ** (svc.inARow - 1));
    this.opts.say(
      `${svc.name} exited (${how}); restarting it in ${delay} ms (crash ${svc.crashes.length} of ${this.opts.maxCrashes} allowed within ${Math.round(this.opts.windowMs / 1000)} s)`,
    );
    svc.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.launch(svc);
      this.opts.say(`${svc.name} restarted (pid ${svc.proc?.pid})`);
    }, delay);
  }
}
