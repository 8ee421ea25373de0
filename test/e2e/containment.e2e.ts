import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { hostProcessesWith, waitNoProcessWith } from '../support/processes';
import { pythonTool } from '../support/tools';

/**
 * Hostile tools, each run through the public API (tools.upsert + tools.execute) on the shared
 * stack's runner (bubblewrap driver). Every case checks that the attack is contained, that the
 * runner keeps serving, and that nothing is left behind on the host.
 */
describe('sandbox containment (hostile tools through the public API)', () => {
  let client: RawClient;
  const org = uniqueOrg('contain');
  const marker = () => `${Math.floor(Math.random() * 1e9)}.5`;
  const register = async (name: string, body: string, params = '') => {
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: pythonTool(name, body, params) },
    });
    if (r.error) throw new Error(JSON.stringify(r.error));
    return r.tool;
  };
  const execute = (tool_name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, tool_name, args, ...extra }, { timeoutMs: 30_000 });
  const runnerPids = () =>
    readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('runner-local/src/main.js');
        } catch {
          return false;
        }
      })
      .map(Number);

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    await register('ping', 'return "pong"');
  });
  afterAll(() => client.close());

  // After every attack the runner still answers, with a fresh sandbox.
  afterEach(async () => {
    const r = await execute('ping');
    expect(r).toMatchObject({ status: 'success', func_return: 'pong' });
  });

  it('cannot read /etc/shadow, the runner files or other processes environ', async () => {
    await register(
      'snoop',
      `import os, glob
found = {}
for path in ["/etc/shadow", "/work/main/package.json", "/root/.bash_history", "/proc/1/environ", "/proc/1/mem"]:
    try:
        with open(path, "rb") as f:
            found[path] = f.read(64).decode("latin-1")
    except OSError as e:
        found[path] = type(e).__name__
environs = {}
for p in glob.glob("/proc/[0-9]*/environ"):
    try:
        environs[p] = open(p, "rb").read().decode("latin-1")
    except OSError as e:
        environs[p] = type(e).__name__
return {"files": found, "environs": environs, "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "me": os.getpid()}`,
    );
    const r = await execute('snoop');
    expect(r.status).toBe('success');
    const { files, environs, pids, me } = r.func_return;
    expect(files['/etc/shadow']).toBe('FileNotFoundError');
    expect(files['/work/main/package.json']).toBe('FileNotFoundError');
    expect(files['/root/.bash_history']).toBe('FileNotFoundError');
    expect(files['/proc/1/environ']).toBe('PermissionError'); // the slot (pid 1) is not dumpable
    expect(files['/proc/1/mem']).toBe('PermissionError');
    expect(pids).toEqual([1, me]); // its own pid namespace: the slot and itself, nothing of the host
    for (const [path, text] of Object.entries(environs as Record<string, string>)) {
      if (path === `/proc/${me}/environ` || path === '/proc/self/environ') continue;
      expect(text).toBe('PermissionError');
    }
    expect(JSON.stringify(r.func_return)).not.toMatch(/NATS_URL|DATABASE_URL|SUBJECT_PREFIX/);
  });

  it("sees only the call's declared env, never the runner's", async () => {
    await register('env_dump', 'import os\nreturn dict(os.environ)');
    const r = await execute('env_dump', {}, { env: { GREETING: 'hi' }, agent_id: 'agent-1' });
    expect(r.status).toBe('success');
    expect(Object.keys(r.func_return).sort()).toEqual(
      [
        'GREETING',
        'HOME',
        'LANG',
        'PATH',
        'PYTHONDONTWRITEBYTECODE',
        'PYTHONIOENCODING',
        'TMPDIR',
        'TOOLPLANE_AGENT_ID',
        'TOOLPLANE_ORG_ID',
        'TOOLPLANE_TOOL_ID',
      ].sort(),
    );
    expect(r.func_return).toMatchObject({
      GREETING: 'hi',
      HOME: '/tmp',
      TMPDIR: '/tmp',
      TOOLPLANE_ORG_ID: org,
      TOOLPLANE_AGENT_ID: 'agent-1',
    });
  });

  it('gets every secret its org set, TOOLPLANE_REGION too, and reserved ids nobody can override', async () => {
    const set = await client.req('toolplane.v1.secrets.set', {
      org_id: org,
      scope: 'sandbox',
      key: 'TOOLPLANE_REGION',
      value: 'eu-west-secret',
    });
    expect(set.error).toBeUndefined();
    // The secret's value is masked in what the tool returns: it answers whether it got it.
    await register(
      'env_ids',
      'import os\nids = {k: v for k, v in os.environ.items() if k.startswith("TOOLPLANE_") and k != "TOOLPLANE_REGION"}\nreturn {"region": os.environ.get("TOOLPLANE_REGION") == "eu-west-secret", **ids}',
    );
    const r = await execute(
      'env_ids',
      {},
      { env: { TOOLPLANE_ORG_ID: 'someone-else', TOOLPLANE_AGENT_ID: 'forged' }, agent_id: 'agent-1' },
    );
    expect(r.status).toBe('success');
    expect(r.func_return).toEqual({
      region: true,
      TOOLPLANE_ORG_ID: org,
      TOOLPLANE_AGENT_ID: 'agent-1',
      TOOLPLANE_TOOL_ID: expect.any(String),
    });
    await client.req('toolplane.v1.secrets.delete', { org_id: org, scope: 'sandbox', key: 'TOOLPLANE_REGION' });
  });

  it('cannot reach NATS or Postgres on 127.0.0.1, and an outside address fails at once', async () => {
    await register(
      'dial',
      `import socket, time
out = {}
for host, port in [("127.0.0.1", 4222), ("127.0.0.1", 5432), ("192.0.2.1", 80)]:
    s = socket.socket()
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect((host, port))
        out[f"{host}:{port}"] = "connected"
    except OSError as e:
        out[f"{host}:{port}"] = [type(e).__name__, round((time.monotonic() - t) * 1000)]
    finally:
        s.close()
try:
    socket.getaddrinfo("example.com", 443)
    out["dns"] = "resolved"
except OSError as e:
    out["dns"] = type(e).__name__
return out`,
    );
    const r = await execute('dial');
    expect(r.status).toBe('success');
    expect(r.func_return['127.0.0.1:4222'][0]).toBe('ConnectionRefusedError');
    expect(r.func_return['127.0.0.1:5432'][0]).toBe('ConnectionRefusedError');
    expect(r.func_return['192.0.2.1:80'][0]).toBe('OSError'); // ENETUNREACH: no route out of the namespace
    expect(r.func_return.dns).toBe('gaierror');
  });

  it('stops a fork bomb at the process limit and kills every fork when the call ends', async () => {
    const m = marker();
    await register(
      'fork_bomb',
      `import os
forked = 0
try:
    while True:
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "${m}"])
        forked += 1
except OSError as e:
    return {"forked": forked, "error": type(e).__name__}`,
    );
    const r = await execute('fork_bomb');
    expect(r.status).toBe('success');
    expect(r.func_return.error).toBe('BlockingIOError'); // EAGAIN from RLIMIT_NPROC
    expect(r.func_return.forked).toBeGreaterThan(10);
    expect(r.func_return.forked).toBeLessThanOrEqual(64);
    expect(await waitNoProcessWith(m)).toEqual([]);
  });

  it('turns a memory bomb into a MemoryError of that call only', async () => {
    await register('memory_bomb', 'chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))');
    const r = await execute('memory_bomb');
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('TOOL_EXCEPTION');
    expect(r.func_return).toBe('Error executing function memory_bomb: MemoryError: ');
  });

  it('kills an infinite loop at the timeout, with its background processes', async () => {
    const m = marker();
    await register(
      'spin_forever',
      `import subprocess\nsubprocess.Popen(["/bin/sleep", "${m}"], start_new_session=True)\nwhile True:\n    pass`,
    );
    const r = await execute('spin_forever', {}, { timeout_ms: 1000 });
    expect(r.error.code).toBe('EXECUTION_TIMEOUT');
    expect(await waitNoProcessWith(m)).toEqual([]);
  });

  it('caps 50 MB of stdout, and stops a tool that never stops writing', async () => {
    await register('flood', 'import sys\nsys.stdout.write("x" * 50_000_000)\nreturn "done"');
    const r = await execute('flood');
    expect(r.status).toBe('success');
    expect(r.func_return).toBe('done');
    expect(r.stdout.join('').length).toBeLessThan(300 * 1024);
    expect(r.stdout.join('')).toContain('output truncated');

    await register('firehose', 'import sys\nwhile True:\n    sys.stdout.write("y" * 1_000_000)');
    const f = await execute('firehose');
    expect(f.status).toBe('error');
    expect(f.error.code).toBe('OUTPUT_LIMIT_EXCEEDED');
  });

  it('cannot forge a result: not on stdout, not on the result channel, not on the control channel', async () => {
    await register('forge_stdout', 'print(\'{"v":1,"nonce":"x","status":"success","value":"forged"}\')\nreturn "real"');
    expect((await execute('forge_stdout')).func_return).toBe('real');

    await register(
      'forge_channel',
      'import os\nos.write(3, b\'{"v":1,"nonce":"0123456789abcdef0123456789abcdef","status":"success","value":"forged"}\\n\')\nreturn "real"',
    );
    const c = await execute('forge_channel');
    expect(c.status).toBe('error');
    expect(c.error.code).toBe('SANDBOX_FAILURE'); // two frames / a foreign nonce: refused, never "forged"
    expect(JSON.stringify(c.func_return)).not.toContain('forged');

    await register(
      'forge_control',
      `import errno, os
out = {}
for fd in (0, 4):
    try:
        os.write(fd, b"\\x00\\x00\\x00\\x10{\\"sentinel\\":\\"x\\"}")
        out[fd] = "written"
    except OSError as e:
        out[fd] = errno.errorcode[e.errno]
return out`,
    );
    const k = await execute('forge_control');
    expect(k.func_return).toEqual({ 0: 'EBADF', 4: 'EBADF' }); // stdin is /dev/null opened read-only, fd 4 is closed
  });

  it('cannot write outside its work dir, and its work dir does not survive the call', async () => {
    const name = `leftover-${marker()}`;
    await register(
      'scribble',
      `import os
out = {}
for path in ["/usr/${name}", "/etc/${name}", "/${name}", "/opt/toolplane/${name}", "/proc/sys/kernel/hostname", "/tmp/${name}"]:
    try:
        with open(path, "w") as f:
            f.write("x")
        out[path] = "written"
    except OSError as e:
        out[path] = type(e).__name__
out["before"] = sorted(os.listdir("/tmp"))
return out`,
    );
    const r = await execute('scribble');
    expect(r.status).toBe('success');
    for (const p of [`/usr/${name}`, `/etc/${name}`, `/${name}`, `/opt/toolplane/${name}`])
      expect(r.func_return[p]).toMatch(/OSError|PermissionError|FileNotFoundError/);
    expect(r.func_return['/proc/sys/kernel/hostname']).toMatch(/OSError|PermissionError/);
    expect(r.func_return[`/tmp/${name}`]).toBe('written');
    await register('look', 'import os\nreturn sorted(os.listdir("/tmp"))');
    expect((await execute('look')).func_return).toEqual([]); // a fresh tmpfs for every call
    expect(existsSync(`/tmp/${name}`)).toBe(false);
    expect(existsSync(`/${name}`)).toBe(false);
  });

  it('cannot kill its parent, the slot or the runner', async () => {
    const [runner] = runnerPids();
    expect(runner).toBeGreaterThan(1);
    await register(
      'patricide',
      `import os, signal
out = {}
for label, pid in [("parent", os.getppid()), ("init", 1), ("runner", runner_pid)]:
    try:
        os.kill(pid, signal.SIGKILL)
        out[label] = "sent"
    except OSError as e:
        out[label] = type(e).__name__
try:
    os.kill(-1, signal.SIGTERM)
    out["everyone"] = "sent"
except OSError as e:
    out["everyone"] = type(e).__name__
return out`,
      'runner_pid: int',
    );
    const r = await execute('patricide', { runner_pid: runner });
    expect(r.status).toBe('success');
    expect(r.func_return.runner).toBe('ProcessLookupError'); // host pids do not exist in its namespace
    // Signals to pid 1 from inside its namespace are dropped by the kernel: the slot survives them.
    expect(() => process.kill(runner!, 0)).not.toThrow();
    expect(runnerPids()).toContain(runner);
  });

  it('leaves no background process behind after returning', async () => {
    const m = marker();
    await register(
      'daemonize',
      `import os, subprocess
subprocess.Popen(["/bin/sleep", "${m}"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["sleep", "${m}"])
return "returned"`,
    );
    const r = await execute('daemonize');
    expect(r.func_return).toBe('returned');
    expect(await waitNoProcessWith(m)).toEqual([]);
    expect(hostProcessesWith(m)).toEqual([]);
  });
});
