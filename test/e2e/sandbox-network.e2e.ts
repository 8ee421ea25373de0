import { expectEventually } from '@toolplane/testing';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { CALL_APPS, metricOf, startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';

/** This machine's own non-loopback IPv4 address (traffic to it stays on the machine). */
function hostAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no non-loopback IPv4 address on this machine');
}

/**
 * Network-enabled tools (sandbox config `network: "egress"`) through the public API, probing only
 * this machine: the host's loopback (where NATS and Postgres listen, and a service the test starts
 * on every address), the host's own address, and the link-local, CGNAT and metadata ranges. Each
 * call has a network namespace of its own reaching out through slirp4netns, under the egress policy.
 */
describe('sandbox: network-enabled tools never see the host', () => {
  const prefix = `net${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('net');
  const host = hostAddress();
  let service: Server;
  let port = 0;
  let accepted = 0;
  let stack: Stack;
  let client: RawClient;
  let opts: StackOptions;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 30_000);
  const execute = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await req('toolplane.v1.tools.execute', { org_id: org, tool_name: name, args });
    if (r.status !== 'success') throw new Error(`${name}: ${JSON.stringify(r)}`);
    return r.func_return;
  };
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);

  beforeAll(async () => {
    service = createServer((s) => {
      accepted++;
      s.end('hello from the host\n');
    });
    await new Promise<void>((r) => service.listen(0, '0.0.0.0', r));
    port = (service.address() as { port: number }).port;
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'runner-local': { RUNNER_ALLOW_NETWORK: 'true', RUNNER_POOL_WARM_NET: '1' } },
    };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: org, provider: 'local', config: { network: 'egress' } });
    await req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool(
          'probe',
          `import socket
out = {}
for target in targets:
    addr, p = target.split(" ")[0], int(target.split(" ")[1])
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    s.settimeout(5)
    try:
        s.connect((addr, p))
        out["%s %d" % (addr, p)] = "connected: " + s.recv(64).decode().strip()
    except OSError as e:
        out["%s %d" % (addr, p)] = type(e).__name__
    finally:
        s.close()
return out`,
          'targets: list[str]',
        ),
      },
    });
    await req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool(
          'listen_abstract',
          `import os, socket
s = socket.socket(socket.AF_UNIX)
s.bind(b"\\0toolplane-net-share")
s.listen(1)
s.settimeout(wait)
try:
    s.accept()
    met = "someone connected"
except OSError:
    met = "nobody"
return {"netns": os.readlink("/proc/self/ns/net"), "slot": os.readlink("/proc/self/ns/pid") + "@" + open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19], "met": met}`,
          'wait: float',
        ),
      },
    });
    await req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool(
          'dial_abstract',
          `import os, socket, time
result = "never tried"
deadline = time.monotonic() + tries
while time.monotonic() < deadline:
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(b"\\0toolplane-net-share")
        result = "connected"
        break
    except OSError as e:
        result = type(e).__name__
        time.sleep(0.05)
    finally:
        c.close()
return {"netns": os.readlink("/proc/self/ns/net"), "slot": os.readlink("/proc/self/ns/pid") + "@" + open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19], "result": result, "nics": sorted(n for _, n in socket.if_nameindex())}`,
          'tries: float',
        ),
      },
    });
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await new Promise((r) => service?.close(r));
  });

  it('reaches neither the host loopback nor private, link-local, CGNAT or metadata addresses; the host service sees no connection', async () => {
    const targets = [
      ['127.0.0.1', port], // its own loopback: nothing listens there
      ['::1', port],
      ['10.0.2.2', port], // slirp4netns's alias of the host loopback
      ['10.0.2.2', 4222], // NATS on the host loopback
      ['::ffff:10.0.2.2', port],
      [host, port], // the host's own address (a private or reserved range)
      ['169.254.169.254', 80], // cloud metadata
      ['100.100.100.200', 80], // metadata in the CGNAT range
      ['100.64.0.1', port],
      ['fd00::1', port], // no IPv6 egress at all
    ];
    const r = await execute('probe', { targets: targets.map(([a, p]) => `${a} ${p}`) });
    expect(r).toEqual({
      [`127.0.0.1 ${port}`]: 'ConnectionRefusedError',
      [`::1 ${port}`]: 'ConnectionRefusedError',
      [`10.0.2.2 ${port}`]: 'PermissionError',
      '10.0.2.2 4222': 'PermissionError',
      [`::ffff:10.0.2.2 ${port}`]: 'PermissionError',
      [`${host} ${port}`]: 'PermissionError',
      '169.254.169.254 80': 'PermissionError',
      '100.100.100.200 80': 'PermissionError',
      [`100.64.0.1 ${port}`]: 'PermissionError',
      [`fd00::1 ${port}`]: 'PermissionError',
    });
    expect(accepted).toBe(0);
  });

  it('gives each call a network namespace of its own: never shared by two calls at once, never reused', async () => {
    const killed = await metric('toolplane_runner_pool_slots_killed_total');
    const listening = execute('listen_abstract', { wait: 4 });
    // The listener's call holds a sandbox before the other call starts.
    await expectEventually(async () =>
      expect(await metric('toolplane_runner_pool_busy_slots')).toBeGreaterThanOrEqual(1),
    );
    const dialer = await execute('dial_abstract', { tries: 1.5 });
    const listener = await listening;
    expect(dialer.result).toBe('ConnectionRefusedError');
    expect(listener.met).toBe('nobody');
    expect(dialer.netns).not.toBe(listener.netns);
    expect(dialer.nics).toEqual(['lo', 'tap0']);
    // The next call finds nothing of theirs: the listener's socket is gone with its namespace. (Its
    // inode number is no proof either way: the kernel hands a freed namespace's number out again.)
    const next = await execute('dial_abstract', { tries: 0.1 });
    expect(next.result).toBe('ConnectionRefusedError');
    expect(next.nics).toEqual(['lo', 'tap0']);
    // Each network-enabled sandbox served its one call and was replaced: never reused. A sandbox's
    // identity is its pid namespace plus the start time of its slot process; the kill count is a
    // lower bound (an idle warm sandbox may be reaped or evicted meanwhile).
    expect(new Set([listener.slot, dialer.slot, next.slot]).size).toBe(3);
    await expectEventually(async () =>
      expect(await metric('toolplane_runner_pool_slots_killed_total')).toBeGreaterThanOrEqual(killed + 3),
    );
  });

  it('reaches an address the operator allowlists (RUNNER_EGRESS_ALLOW), and only that one', async () => {
    await stack.stopApp('runner-local');
    const runner = await startApp('runner-local', {
      ...opts,
      appEnv: { 'runner-local': { ...opts.appEnv!['runner-local'], RUNNER_EGRESS_ALLOW: `${host}/32` } },
    });
    stack.apps.set('runner-local', runner);
    const r = await execute('probe', { targets: [`${host} ${port}`, `10.0.2.2 ${port}`] });
    expect(r).toEqual({
      [`${host} ${port}`]: 'connected: hello from the host',
      [`10.0.2.2 ${port}`]: 'PermissionError',
    });
    expect(accepted).toBe(1);
  });
});
