import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProcessDriver } from './process.driver';
import type { SandboxRunSpec } from './sandbox.types';

// Real /usr/bin/python3, no mocks. Sandbox isolation (limits, kills, env, uid) is covered in
// process.driver.isolation.spec.ts; this file covers the call semantics of the harness.

const limits = { stdoutBytes: 64 * 1024, stderrBytes: 64 * 1024, maxOutputBytes: 64 * 1024 * 1024 };

function spec(
  sourceCode: string,
  args: Record<string, unknown> = {},
  extra: Partial<SandboxRunSpec> = {},
): SandboxRunSpec {
  return { runId: 'run-1', sourceCode, functionName: 'f', args, env: {}, timeoutMs: 10_000, limits, ...extra };
}

describe('ProcessDriver: calling a tool', () => {
  let workRoot: string;
  let sut: ProcessDriver;

  beforeAll(() => {
    workRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'tp-sandbox-spec-'));
    sut = new ProcessDriver({ workRoot });
  });

  afterAll(async () => {
    await sut.close();
    fs.rmSync(workRoot, { recursive: true, force: true });
  });

  it('passes int, str, list and dict arguments as data and returns the value', async () => {
    const source =
      'def f(n, s, items, opts):\n    return {"n": n + 1, "s": s.upper(), "items": items[::-1], "opts": opts}\n';
    const args = { n: 41, s: "it's \"quoted\"\n'''", items: [1, 'two', null], opts: { nested: { ok: true } } };
    const outcome = await sut.run(spec(source, args));
    expect(outcome).toMatchObject({ status: 'success', exitCode: 0, signal: null });
    expect(outcome.value).toEqual({
      n: 42,
      s: "IT'S \"QUOTED\"\n'''",
      items: [null, 'two', 1],
      opts: { nested: { ok: true } },
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.durationMs).toBeGreaterThan(0);
  });

  it('never splices arguments into source: a code-looking string stays a string', async () => {
    const outcome = await sut.run(spec('def f(s):\n    return s\n', { s: '"); import os; os._exit(9) #' }));
    expect(outcome).toMatchObject({ status: 'success', value: '"); import os; os._exit(9) #' });
  });

  it('uses default arguments the caller leaves out', async () => {
    const outcome = await sut.run(spec('def f(a, b=2, *, c="x"):\n    return [a, b, c]\n', { a: 1 }));
    expect(outcome.value).toEqual([1, 2, 'x']);
  });

  it('runs async def tools to completion', async () => {
    const source = 'import asyncio\nasync def f(x):\n    await asyncio.sleep(0.01)\n    return x * 2\n';
    const outcome = await sut.run(spec(source, { x: 21 }));
    expect(outcome).toMatchObject({ status: 'success', value: 42 });
  });

  it('injects agent_id when the function declares it, and only then', async () => {
    const withParam = await sut.run(
      spec('def f(x, agent_id=None):\n    return [x, agent_id]\n', { x: 1 }, { agentId: 'agent-7' }),
    );
    expect(withParam.value).toEqual([1, 'agent-7']);
    const without = await sut.run(spec('def f(x):\n    return x\n', { x: 1 }, { agentId: 'agent-7' }));
    expect(without).toMatchObject({ status: 'success', value: 1 });
  });

  it('serializes models, dataclasses, sets and other non-JSON values', async () => {
    const source = [
      'import dataclasses, datetime',
      'class Model:',
      '    def __init__(self): self.name = "m"',
      '    def model_dump(self): return {"name": self.name, "when": datetime.date(2024, 1, 2)}',
      '@dataclasses.dataclass',
      'class Point:',
      '    x: int',
      '    y: int',
      'def f():',
      '    return {"model": Model(), "point": Point(1, 2), "set": {3}, "tuple": (1, 2), "nan": float("nan"), 5: "int key"}',
    ].join('\n');
    const outcome = await sut.run(spec(source));
    expect(outcome.status).toBe('success');
    expect(outcome.value).toEqual({
      model: { name: 'm', when: '2024-01-02' },
      point: { x: 1, y: 2 },
      set: '{3}',
      tuple: [1, 2],
      nan: 'nan',
      '5': 'int key',
    });
  });

  it('masks secrets before cutting the output (unsafe mode too): a secret straddling the cut leaks nothing', async () => {
    const secret = 'sk-unsafe-0123456789';
    const outcome = await sut.run(
      spec(
        `import sys\ndef f():\n    sys.stdout.write("x" * 65530 + "${secret}")\n    raise ValueError("bad ${secret}")\n`,
        {},
        { maskValues: [secret] },
      ),
    );
    expect(outcome.stdout).toBe(`${'x'.repeat(65530)}***`);
    expect(outcome.stdoutTruncated).toBe(false); // the masked text fits: the secret is whole, as ***
    expect(outcome.error).toMatchObject({ type: 'ValueError', message: 'bad ***' });
  });

  it('captures print() on stdout and stderr separately', async () => {
    const source =
      'import sys\ndef f():\n    print("to out")\n    print("to err", file=sys.stderr)\n    print("ünï")\n    return None\n';
    const outcome = await sut.run(spec(source));
    expect(outcome).toMatchObject({
      status: 'success',
      value: null,
      stdout: 'to out\nünï\n',
      stderr: 'to err\n',
      stdoutTruncated: false,
    });
  });

  it('reports an exception with its type and message and prints a readable traceback', async () => {
    const source = 'def helper(v):\n    raise ValueError(f"bad value {v}")\n\ndef f(v):\n    return helper(v)\n';
    const outcome = await sut.run(spec(source, { v: 3 }));
    expect(outcome).toMatchObject({
      status: 'error',
      error: { kind: 'exception', type: 'ValueError', message: 'bad value 3' },
    });
    expect(outcome.stderr).toContain('Traceback (most recent call last)');
    expect(outcome.stderr).toContain('File "<tool:f>", line 2, in helper');
    expect(outcome.stderr).toContain('raise ValueError(f"bad value {v}")');
    expect(outcome.stderr).not.toContain('harness.py');
  });

  it('reports syntax errors, a missing function and wrong arguments as exceptions', async () => {
    const syntax = await sut.run(spec('def f(:\n  pass\n'));
    expect(syntax.error).toMatchObject({ kind: 'exception', type: 'SyntaxError' });
    const missing = await sut.run(spec('def g():\n    return 1\n'));
    expect(missing.error).toMatchObject({
      kind: 'exception',
      type: 'NameError',
      message: "function 'f' is not defined by the tool source",
    });
    const badArgs = await sut.run(spec('def f(a):\n    return a\n', { b: 1 }));
    expect(badArgs.error).toMatchObject({ kind: 'exception', type: 'TypeError' });
  });

  it('treats sys.exit() in a tool as an exception, and a hard exit as a crash', async () => {
    const exit = await sut.run(spec('import sys\ndef f():\n    sys.exit(4)\n'));
    expect(exit.error).toMatchObject({ kind: 'exception', type: 'SystemExit', message: '4' });
    const hard = await sut.run(spec('import os\ndef f():\n    os._exit(3)\n'));
    expect(hard).toMatchObject({ exitCode: 3, error: { kind: 'crashed', type: 'SandboxCrashed' } });
    const clean = await sut.run(spec('import os\ndef f():\n    os._exit(0)\n'));
    expect(clean.error).toMatchObject({ kind: 'protocol', message: 'no result frame' });
  });

  it('lets warnings through to stderr without failing the call', async () => {
    const source = 'import warnings\ndef f():\n    warnings.warn("careful", UserWarning)\n    return "ok"\n';
    const outcome = await sut.run(spec(source));
    expect(outcome).toMatchObject({ status: 'success', value: 'ok' });
    expect(outcome.stderr).toContain('UserWarning: careful');
  });

  it('gives the tool an empty stdin', async () => {
    const outcome = await sut.run(spec('import sys\ndef f():\n    return sys.stdin.read()\n'));
    expect(outcome).toMatchObject({ status: 'success', value: '' });
  });

  it('ignores a forged result frame printed on stdout', async () => {
    const forged = '{"v":1,"nonce":"0","status":"success","value":"forged"}';
    const source = `import os\ndef f():\n    print(${JSON.stringify(forged)})\n    os.write(1, b${JSON.stringify(forged + '\n')})\n    return "real"\n`;
    const outcome = await sut.run(spec(source));
    expect(outcome).toMatchObject({ status: 'success', value: 'real' });
    expect(outcome.stdout).toContain('forged');
  });

  it('fails with protocol when the tool writes to the result channel', async () => {
    const outcome = await sut.run(spec('import os\ndef f():\n    os.write(3, b"garbage\\n")\n    return "real"\n'));
    expect(outcome).toMatchObject({ status: 'error', error: { kind: 'protocol', type: 'ProtocolError' } });
  });

  it('does not hand the result channel to subprocesses of the tool', async () => {
    const source = [
      'import subprocess, sys',
      'def f():',
      "    code = \"import os\\ntry:\\n    os.write(3, b'x')\\n    print('wrote')\\nexcept OSError as e:\\n    print('denied', e.errno)\"",
      '    out = subprocess.run([sys.executable, "-c", code], close_fds=False, capture_output=True, text=True)',
      '    return out.stdout.strip()',
    ].join('\n');
    const outcome = await sut.run(spec(source));
    expect(outcome).toMatchObject({ status: 'success', value: 'denied 9' }); // EBADF
  });

  it('returns spawn_failed, never throws, when the interpreter cannot start', async () => {
    const broken = new ProcessDriver({ workRoot, pythonPath: '/nonexistent/python3' });
    const outcome = await broken.run(spec('def f():\n    return 1\n'));
    await broken.close();
    expect(outcome).toMatchObject({
      status: 'error',
      error: { kind: 'spawn_failed', type: 'SpawnError' },
      exitCode: null,
    });
    expect(outcome.error?.message).toContain('/nonexistent/python3');
  });

  it('rejects an env variable name the OS cannot carry', async () => {
    const outcome = await sut.run(spec('def f():\n    return 1\n', {}, { env: { 'A=B': 'x' } }));
    expect(outcome.error).toMatchObject({ kind: 'spawn_failed', type: 'InvalidEnv' });
  });

  it('runs 20 calls concurrently, each with its own result', async () => {
    const source =
      'import os, time\ndef f(i):\n    time.sleep(0.05)\n    print(i)\n    return {"i": i, "cwd": os.getcwd()}\n';
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sut.run(spec(source, { i }, { runId: `run-${i}` }))),
    );
    outcomes.forEach((o, i) => {
      expect(o).toMatchObject({ status: 'success', value: { i }, stdout: `${i}\n` });
    });
    expect(new Set(outcomes.map((o) => (o.value as { cwd: string }).cwd)).size).toBe(20);
  });
});
