import { uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, type Stack, startCallStack } from '../support/stack';
import { pythonTool } from '../support/tools';

/** A tool body naming the sandbox it ran in: its pid namespace and the start time of its slot process (pid 1 in it). */
const IDENTITY =
  'import os\nwith open("/proc/1/stat") as f:\n    start = f.read().rsplit(")", 1)[1].split()[19]\nreturn os.readlink("/proc/self/ns/pid") + "@" + start';

/**
 * Nothing one call leaves reaches the next, of any org: two orgs take turns on a runner with a
 * single warm sandbox (one slot, one call at a time), through the public API. The attacker plants
 * what it can — a file in /dev/shm and /tmp, links over /dev/stdout and /dev/stderr, a background
 * process listening on an abstract socket that hands out file descriptors, SysV IPC — then the
 * victim's call runs in the same sandbox (same pid namespace) and finds none of it; its secret,
 * written to its stderr, stays masked and reaches nobody else. A call that leaves what the slot
 * cannot clean (a socket in flight, a connection in TIME_WAIT) gets its sandbox destroyed.
 */
describe('sandbox: nothing crosses from one call (or org) to the next', () => {
  const prefix = `cross${Math.random().toString(36).slice(2, 8)}`;
  const attacker = uniqueOrg('attacker');
  const victim = uniqueOrg('victim');
  const SECRET = 'sk-victim-0123456789abcdef';
  let stack: Stack;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 30_000);
  const register = (org: string, name: string, body: string) =>
    req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: pythonTool(name, body) } });
  const execute = async (org: string, name: string, extra: Record<string, unknown> = {}) => {
    const r = await req('toolplane.v1.tools.execute', { org_id: org, tool_name: name, args: {}, ...extra });
    if (r.status !== 'success') throw new Error(`${name}: ${JSON.stringify(r)}`);
    return r;
  };
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);

  beforeAll(async () => {
    stack = await startCallStack(prefix, {
      'runner-local': { RUNNER_POOL_WARM: '1', RUNNER_POOL_MAX_PER_ENV: '1', RUNNER_MAX_CONCURRENCY: '1' },
    });
    client = await RawClient.connect(prefix);
    await register(
      attacker,
      'leave_traces',
      `import os, socket, subprocess, sys, textwrap, time, ctypes
out = {"pidns": os.readlink("/proc/self/ns/pid")}
for path in ("/dev/shm/planted", "/tmp/planted"):
    with open(path, "w") as f:
        f.write("left by the previous call")
out["planted"] = sorted(os.listdir("/dev/shm"))
for name in ("stdout", "stderr"):
    try:
        os.remove("/dev/" + name)
        os.symlink("/dev/shm/captured-" + name, "/dev/" + name)
        out[name] = "swapped"
    except OSError as e:
        out[name] = e.strerror
server = """
import os, socket
s = socket.socket(socket.AF_UNIX)
s.bind(b"\\\\0toolplane-leak")
s.listen(8)
d = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
while True:
    c, _ = s.accept()
    socket.send_fds(c, [b"x"], [d, 1, 2])
"""
subprocess.Popen([sys.executable, "-c", textwrap.dedent(server)], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(b"\\0toolplane-leak")
        out["fds_from_own_listener"] = len(socket.recv_fds(c, 1, 4)[1])
        break
    except OSError:
        time.sleep(0.01)
    finally:
        c.close()
libc = ctypes.CDLL(None, use_errno=True)
out["shmget"] = [libc.shmget(0x7001, 4096, 0o1000 | 0o666), ctypes.get_errno()]
return out`,
    );
    await register(
      victim,
      'look_around',
      `import os, socket, subprocess
out = {"pidns": os.readlink("/proc/self/ns/pid"), "shm": sorted(os.listdir("/dev/shm")), "tmp": sorted(os.listdir("/tmp")),
       "stdout": os.readlink("/dev/stdout"), "stderr": os.readlink("/dev/stderr"),
       "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "me": os.getpid()}
c = socket.socket(socket.AF_UNIX)
try:
    c.connect(b"\\0toolplane-leak")
    out["abstract"] = "connected: %d fds" % len(socket.recv_fds(c, 1, 4)[1])
except OSError as e:
    out["abstract"] = type(e).__name__
with open("/proc/sysvipc/shm") as f:
    out["sysv_shm"] = len(f.read().splitlines()) - 1
subprocess.run("echo token=$API_KEY >&2", shell=True)
print("token=" + os.environ["API_KEY"])
return out`,
    );
    await register(
      attacker,
      'collect',
      'import os\nreturn {"pidns": os.readlink("/proc/self/ns/pid"), "shm": {n: open("/dev/shm/" + n).read() for n in os.listdir("/dev/shm")}, "tmp": os.listdir("/tmp")}',
    );
    // A slot's identity: its pid namespace and the start time of its process (pid 1 in it): the kernel
    // hands a freed namespace's inode number out again, never with the same start time.
    await register(victim, 'whoami', IDENTITY);
    await req('toolplane.v1.secrets.set', {
      org_id: victim,
      scope: 'agent',
      agent_id: 'victim-agent',
      key: 'API_KEY',
      value: SECRET,
    });
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('two orgs take turns on one sandbox: the second finds nothing of the first, and its secret stays its own', async () => {
    const planted = (await execute(attacker, 'leave_traces')).func_return;
    expect(planted.planted).toEqual(['planted']); // /dev/shm is writable during the call…
    expect(planted.stdout).toBe('Read-only file system'); // …but /dev is not
    expect(planted.stderr).toBe('Read-only file system');
    expect(planted.fds_from_own_listener).toBe(3); // the fd-passing listener worked during the call
    expect(planted.shmget[0]).toBe(-1); // SysV IPC refused (EPERM)
    expect(planted.shmget[1]).toBe(1);

    const started = await metric('toolplane_runner_pool_slots_started_total');
    const seen = await execute(victim, 'look_around', { agent_id: 'victim-agent' });
    const v = seen.func_return;
    expect(v.pidns).toBe(planted.pidns); // the same sandbox, reused: the proof below is about reuse
    expect(await metric('toolplane_runner_pool_slots_started_total')).toBe(started);
    expect(v).toMatchObject({
      shm: [],
      tmp: [],
      stdout: '/proc/self/fd/1',
      stderr: '/proc/self/fd/2',
      abstract: 'ConnectionRefusedError',
      sysv_shm: 0,
    });
    expect(v.pids).toEqual([1, v.me]); // the background listener died with its call
    expect(seen.stderr.join('')).toContain('token=***');
    expect(seen.stdout.join('')).toContain('token=***');
    expect(JSON.stringify(seen)).not.toContain(SECRET);

    const after = (await execute(attacker, 'collect')).func_return;
    expect(after).toEqual({ pidns: planted.pidns, shm: {}, tmp: [] });
  });

  it.each([
    [
      'a socket in flight (sent over a socket, both ends closed)',
      'import socket\na, b = socket.socketpair()\nsocket.send_fds(a, [b"x"], [a.fileno(), b.fileno()])\na.close()\nb.close()',
    ],
    [
      'a TCP connection in TIME_WAIT on its loopback',
      'import socket, time\ns = socket.socket()\ns.bind(("127.0.0.1", 0))\ns.listen()\nc = socket.create_connection(s.getsockname())\nx, _ = s.accept()\nc.close()\ntime.sleep(0.05)\nx.close()\ns.close()',
    ],
  ])(
    'a sandbox that cannot prove itself clean after a call that leaves %s is destroyed, not reused',
    async (_what, body) => {
      const name = `dirty_${Math.random().toString(36).slice(2, 8)}`;
      await register(attacker, name, `${body}\n${IDENTITY}`);
      const dirty = await metric('toolplane_runner_pool_slots_dirty_total');
      const started = await metric('toolplane_runner_pool_slots_started_total');
      const used = (await execute(attacker, name)).func_return;
      expect(used).toMatch(/^pid:\[\d+\]@\d+$/);
      const next = (await execute(victim, 'whoami')).func_return;
      expect(next).toMatch(/^pid:\[\d+\]@\d+$/);
      // The next call ran in another sandbox than the dirty one, which was counted dirty and replaced.
      expect(next).not.toBe(used);
      expect(await metric('toolplane_runner_pool_slots_dirty_total')).toBe(dirty + 1);
      expect(await metric('toolplane_runner_pool_slots_started_total')).toBeGreaterThanOrEqual(started);
    },
  );

  it('masks a secret before the output is cut: one that straddles the 256 KiB cut leaks no part of itself', async () => {
    await register(
      victim,
      'straddle',
      `import os, sys\nsys.stdout.write("x" * (262144 - 10) + os.environ["API_KEY"] + "y" * 100)\nreturn len(os.environ["API_KEY"])`,
    );
    const r = await execute(victim, 'straddle', { agent_id: 'victim-agent' });
    expect(r.func_return).toBe(SECRET.length);
    const out = r.stdout.join('');
    expect(out).toContain('output truncated');
    const kept = out.slice(0, out.indexOf('\n[... output truncated'));
    expect(kept).toBe(`${'x'.repeat(262144 - 10)}***`);
    for (let k = 4; k <= SECRET.length; k++) expect(out).not.toContain(SECRET.slice(0, k));
  });
});
