import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProcessDriver } from './process.driver';
import type { SandboxRunSpec } from './sandbox.types';

// Real /usr/bin/python3, no mocks: deadlines, output limits, process-group cleanup, work dirs,
// environment allowlist and privilege drop.

const MB = 1024 * 1024;
const limits = { stdoutBytes: 64 * 1024, stderrBytes: 64 * 1024, maxOutputBytes: 64 * MB };
const asRoot = process.getuid?.() === 0;

function spec(sourceCode: string, extra: Partial<SandboxRunSpec> = {}): SandboxRunSpec {
  return { runId: 'run-1', sourceCode, functionName: 'f', args: {}, env: {}, timeoutMs: 10_000, limits, ...extra };
}

/** Alive and not a zombie waiting for its reaper. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('ProcessDriver: isolation', () => {
  let workRoot: string;
  let sut: ProcessDriver;

  beforeAll(() => {
    workRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'tp-sandbox-iso-'));
    sut = new ProcessDriver({ workRoot });
  });

  afterAll(async () => {
    await sut.close();
    fs.rmSync(workRoot, { recursive: true, force: true });
  });

  it('kills an endless tool at the deadline, leaving no process behind', async () => {
    const source = 'import os\ndef f():\n    print(os.getpid(), flush=True)\n    while True:\n        pass\n';
    const outcome = await sut.run(spec(source, { timeoutMs: 300 }));
    expect(outcome).toMatchObject({
      status: 'error',
      error: { kind: 'timeout', type: 'TimeoutError', message: 'Function f timed out after 300 ms' },
    });
    expect(outcome).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    const pid = Number(outcome.stdout.trim());
    expect(pid).toBeGreaterThan(1);
    expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('kills background children of a successful tool and returns without waiting for them', async () => {
    // The sleep inherits stdout/stderr: without the group kill the pipes would stay open for an hour
    // (far past the test's own timeout).
    const source = 'import subprocess\ndef f():\n    return subprocess.Popen(["sleep", "3600"]).pid\n';
    const outcome = await sut.run(spec(source));
    expect(outcome.status).toBe('success');
    const child = outcome.value as number;
    expect(child).toBeGreaterThan(1);
    await waitFor(() => !isRunning(child));
    expect(isRunning(child)).toBe(false);
  });

  it('keeps the first stdoutBytes of a 10 MB print, flags truncation and still returns', async () => {
    const source =
      'import sys\ndef f():\n    sys.stdout.write("é" * (5 * 1024 * 1024))\n    print("tail", file=sys.stderr)\n    return "done"\n';
    const outcome = await sut.run(
      spec(source, { limits: { stdoutBytes: 1001, stderrBytes: 1024, maxOutputBytes: 64 * MB } }),
    );
    expect(outcome).toMatchObject({
      status: 'success',
      value: 'done',
      stdoutTruncated: true,
      stderrTruncated: false,
      stderr: 'tail\n',
    });
    expect(outcome.stdout).toBe('é'.repeat(500)); // 1001 bytes cut mid-character: the half character is dropped
  });

  it('kills a run whose total output exceeds maxOutputBytes', async () => {
    const source =
      'import sys\ndef f():\n    while True:\n        sys.stdout.write("x" * 65536)\n        sys.stderr.write("y" * 65536)\n';
    const outcome = await sut.run(
      spec(source, { limits: { stdoutBytes: 100, stderrBytes: 100, maxOutputBytes: 2 * MB } }),
    );
    expect(outcome).toMatchObject({
      status: 'error',
      error: { kind: 'output_limit', type: 'OutputLimitExceeded' },
      signal: 'SIGKILL',
    });
    expect(outcome).toMatchObject({ stdout: 'x'.repeat(100), stdoutTruncated: true, stderrTruncated: true });
  });

  it('gives the tool only the allowlisted environment plus spec.env', async () => {
    process.env.TOOLPLANE_RUNNER_SECRET = 'must-not-leak';
    try {
      const source =
        'import os\ndef f():\n    return {"env": dict(os.environ), "cwd": os.getcwd(), "tmp": __import__("tempfile").gettempdir()}\n';
      const outcome = await sut.run(spec(source, { env: { API_KEY: 'k-1', HOME: '/root' } }));
      const value = outcome.value as { env: Record<string, string>; cwd: string; tmp: string };
      expect(value.env.TOOLPLANE_RUNNER_SECRET).toBeUndefined();
      expect(Object.keys(value.env).sort()).toEqual([
        'API_KEY',
        'HOME',
        'LANG',
        'PATH',
        'PYTHONDONTWRITEBYTECODE',
        'PYTHONIOENCODING',
        'TMPDIR',
      ]);
      expect(value.env).toMatchObject({
        API_KEY: 'k-1',
        PATH: '/usr/local/bin:/usr/bin:/bin',
        LANG: 'C.UTF-8',
        PYTHONIOENCODING: 'utf-8',
      });
      expect(value.env.HOME).toBe(value.cwd); // spec.env cannot move HOME out of the work dir
      expect(value.env.TMPDIR).toBe(value.cwd);
      expect(value.tmp).toBe(value.cwd);
      expect(path.dirname(value.cwd)).toBe(fs.realpathSync(workRoot));
    } finally {
      delete process.env.TOOLPLANE_RUNNER_SECRET;
    }
  });

  it('gives each run a private 0700 work dir and removes it afterwards, also after a timeout', async () => {
    const source = [
      'import os, stat',
      'def f(hang=False):',
      '    os.makedirs("a/b")',
      '    open("a/b/file.txt", "w").write("x")',
      '    os.chmod("a/b", 0)',
      '    print(os.getcwd(), flush=True)',
      '    while hang:',
      '        pass',
      '    return oct(stat.S_IMODE(os.stat(".").st_mode))',
    ].join('\n');
    const ok = await sut.run(spec(source));
    expect(ok).toMatchObject({ status: 'success', value: '0o700' });
    expect(fs.existsSync(ok.stdout.trim())).toBe(false);
    const hung = await sut.run(spec(source, { args: { hang: true }, timeoutMs: 300 }));
    expect(hung.error?.kind).toBe('timeout');
    expect(fs.existsSync(hung.stdout.trim())).toBe(false);
    expect(fs.readdirSync(workRoot).filter((n) => n.startsWith('run-'))).toEqual([]);
  });

  (asRoot ? it : it.skip)('runs tool code as nobody when the runner is root: /etc/shadow is unreadable', async () => {
    const outcome = await sut.run(spec('def f():\n    return open("/etc/shadow").read()\n'));
    expect(outcome).toMatchObject({ status: 'error', error: { kind: 'exception', type: 'PermissionError' } });
    const ids = await sut.run(spec('import os\ndef f():\n    return [os.getuid(), os.getgid(), os.getgroups()]\n'));
    expect(ids.value).toEqual([65534, 65534, []]);
  });

  it('aborts a run when the caller signal fires', async () => {
    const controller = new AbortController();
    const pending = sut.run(spec('import time\ndef f():\n    time.sleep(30)\n'), controller.signal);
    setTimeout(() => controller.abort(), 100);
    const outcome = await pending;
    expect(outcome).toMatchObject({
      status: 'error',
      error: { kind: 'timeout', type: 'AbortError' },
      signal: 'SIGKILL',
    });
    const already = await sut.run(spec('def f():\n    return 1\n'), AbortSignal.abort());
    expect(already.error).toMatchObject({ kind: 'timeout', type: 'AbortError' });
  });

  it('close() ends runs in flight and refuses new ones', async () => {
    const driver = new ProcessDriver({ workRoot });
    const pending = driver.run(spec('import time\ndef f():\n    time.sleep(30)\n'));
    await new Promise((r) => setTimeout(r, 100));
    await driver.close();
    await expect(pending).resolves.toMatchObject({ error: { kind: 'crashed', type: 'SandboxClosed' } });
    await expect(driver.run(spec('def f():\n    return 1\n'))).resolves.toMatchObject({
      error: { kind: 'spawn_failed', type: 'SandboxClosed' },
    });
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
