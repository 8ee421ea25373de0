import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Supervisor, type SupervisorOptions } from './supervisor';

/** A real service stand-in: an HTTP server on `port` answering its pid. */
const SERVER = `require('node:http').createServer((q, s) => s.end(String(process.pid))).listen(Number(process.env.PORT), '127.0.0.1')`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const pidServing = (port: number): Promise<number | undefined> =>
  fetch(`http://127.0.0.1:${port}/`).then(
    async (r) => Number(await r.text()),
    () => undefined,
  );

describe('Supervisor', () => {
  let sut: Supervisor;
  const lines: string[] = [];
  const loops: Array<{ name: string; reason: string }> = [];
  const spawned: ChildProcess[] = [];
  const options = (over: Partial<SupervisorOptions> = {}): SupervisorOptions => ({
    backoffMs: 50,
    backoffMaxMs: 400,
    maxCrashes: 4,
    windowMs: 60_000,
    stableAfterMs: 60_000,
    say: (l) => lines.push(l),
    onCrashLoop: (name, reason) => loops.push({ name, reason }),
    ...over,
  });
  const node =
    (script: string, env: Record<string, string> = {}) =>
    () => {
      const p = spawn(process.execPath, ['-e', script], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
        stdio: 'ignore',
      });
      spawned.push(p);
      return p;
    };

  beforeEach(() => {
    lines.length = 0;
    loops.length = 0;
  });
  afterEach(async () => {
    await sut?.stopAll(2000);
    // Nothing the test started outlives it.
    for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    spawned.length = 0;
  });

  it('restarts a killed service, which serves again, and keeps the others running', async () => {
    sut = new Supervisor(options());
    const [portA, portB] = [await freePort(), await freePort()];
    const a = sut.add('alpha', node(SERVER, { PORT: String(portA) }));
    const b = sut.add('beta', node(SERVER, { PORT: String(portB) }));
    expect(
      await eventually(
        () => pidServing(portA),
        (pid) => pid === a.pid,
      ),
    ).toBe(a.pid);
    await eventually(
      () => pidServing(portB),
      (pid) => pid === b.pid,
    );
    a.kill('SIGKILL');
    const again = await eventually(
      () => pidServing(portA),
      (pid) => pid !== undefined && pid !== a.pid,
    );
    expect(again).toBe(sut.processOf('alpha')?.pid);
    expect(sut.processOf('beta')?.pid).toBe(b.pid);
    expect(loops).toEqual([]);
    expect(lines.join('\n')).toMatch(/alpha exited \(signal SIGKILL\); restarting it in 50 ms/);
  });

  it('backs off, doubling, and stops on a crash loop naming the service', async () => {
    sut = new Supervisor(options());
    const port = await freePort();
    const healthy = sut.add('healthy', node(SERVER, { PORT: String(port) }));
    sut.add('broken', node('process.exit(3)'));
    await eventually(
      async () => loops.length,
      (n) => n === 1,
    );
    expect(loops[0]!.name).toBe('broken');
    expect(loops[0]!.reason).toMatch(/^broken is crash-looping: it exited 4 times within 60 s \(last: code 3\)$/);
    const delays = lines.filter((l) => l.startsWith('broken exited')).map((l) => Number(/in (\d+) ms/.exec(l)![1]));
    expect(delays).toEqual([50, 100, 200]);
    // The stack is the caller's to stop; the healthy service is untouched until then, and nothing restarts after.
    expect(sut.processOf('healthy')?.pid).toBe(healthy.pid);
    await sut.stopAll(2000);
    expect(sut.processOf('healthy')).toBeUndefined();
    expect(sut.processOf('broken')).toBeUndefined();
  });

  it('stops everything without restarting on stopAll (Ctrl+C)', async () => {
    sut = new Supervisor(options());
    const port = await freePort();
    const p = sut.add('alpha', node(SERVER, { PORT: String(port) }));
    await eventually(
      () => pidServing(port),
      (pid) => pid === p.pid,
    );
    await sut.stopAll(2000);
    expect(p.signalCode).toBe('SIGTERM');
    expect(await pidServing(port)).toBeUndefined();
    expect(lines.filter((l) => l.includes('restarting'))).toEqual([]);
  });
});
