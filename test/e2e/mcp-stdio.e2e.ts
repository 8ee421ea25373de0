/**
 * stdio MCP servers are never tenant-chosen host commands: only an operator's allowlisted programs
 * run, each in a bubblewrap sandbox with nothing of mcp-sync — its environment, files, network.
 */
import { join } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { ROOT } from '../support/env';
import { everythingStdio, spyStdio } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';

describe('stdio MCP servers: allowlisted, sandboxed', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  const add = (org: string, server: Record<string, unknown>) =>
    client.req(
      'toolplane.v1.mcp.servers.add',
      { org_id: org, server: { transport: 'stdio', ...server } },
      { timeoutMs: 30_000 },
    );

  it('refuses a command, arguments or env the operator did not allow, and stores nothing', async () => {
    const org = uniqueOrg('stdio-refused');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'shell', command: '/bin/sh', args: ['-c', 'cat /proc/1/environ'] }, /\/bin\/sh is not allowed here/],
      [{ name: 'relative', command: 'node', args: everythingStdio.args }, /is not allowed here/],
      [
        { name: 'eval', command: everythingStdio.command, args: ['-e', 'require("child_process").execSync("id")'] },
        /arguments .* do not match/,
      ],
      [
        { name: 'extra', command: everythingStdio.command, args: [...everythingStdio.args, '--inspect'] },
        /arguments .* do not match/,
      ],
      [
        { name: 'preload', ...everythingStdio, env: { NODE_OPTIONS: '--require /tmp/x.js' } },
        /env var NODE_OPTIONS may not be set/,
      ],
      [{ name: 'ld', ...everythingStdio, env: { LD_PRELOAD: '/tmp/evil.so' } }, /env var LD_PRELOAD may not be set/],
    ];
    for (const [server, message] of cases) {
      const r = await add(org, server);
      expect([server.name, r.error?.code]).toEqual([server.name, 'MCP_COMMAND_REFUSED']);
      expect(r.error.message).toMatch(message);
      expect(r.error.retryable).toBe(false);
    }
    expect((await client.req('toolplane.v1.mcp.servers.list', { org_id: org })).servers).toEqual([]);
  });

  it('gives an allowlisted server nothing of mcp-sync: not its environment, files, processes or network', async () => {
    const org = uniqueOrg('stdio-spy');
    // The service's own key and the development secrets the repository holds, by path.
    const keyFile = join(process.env.TOOLPLANE_TEST_KEYS_DIR!, 'mcp-sync.key');
    const r = await add(org, { name: 'spy', ...spyStdio(keyFile), env: { SPY_SETTING: 'from-the-server-config' } });
    expect(r.error).toBeUndefined();
    const look = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'look', args: {} },
      { timeoutMs: 30_000 },
    );
    expect(look.status).toBe('success');
    const seen = JSON.parse(look.func_return);
    // Its env is exactly what the server config and the sandbox give, nothing of the service.
    expect(Object.keys(seen.env).sort()).toEqual(['HOME', 'LANG', 'PATH', 'PWD', 'SPY_SETTING']);
    expect(seen.env.SPY_SETTING).toBe('from-the-server-config');
    // Its parent and pid 1 are the sandbox's own: their environment is the server's at most.
    const service = [
      'NATS_URL',
      'DATABASE_URL',
      'SERVICE_KEYS_DIR',
      'SUBJECT_PREFIX',
      'MCP_ENCRYPTION_KEY',
      'HEALTH_PORT',
      'TOOLPLANE_PROFILE',
    ];
    for (const environ of [seen.parent_environ, seen.pid1_environ]) {
      const text = JSON.stringify(environ);
      for (const name of service) expect([name, text.includes(`${name}=`)]).toEqual([name, false]);
    }
    // No process of the host; the working directory is empty, wherever the read paths lie (no bind
    // passes through it: the repository may be cloned under /tmp); the key file is not there.
    expect(seen.processes.length).toBeLessThan(5);
    expect(seen.cwd).toBe('/sandbox');
    expect(seen.cwd_entries).toEqual([]);
    expect(seen.files[keyFile]).toMatch(/^refused: ENOENT/);
    // No network: not even the host's loopback services.
    expect(seen.nats).toMatch(/^refused: (ENETUNREACH|ECONNREFUSED)/);
    expect(seen.postgres).toMatch(/^refused: (ENETUNREACH|ECONNREFUSED)/);
    expect(seen.uid).not.toBe(0);
    // The repository is not readable from it either (only node_modules and the spy's own directory are bound).
    const org2 = uniqueOrg('stdio-spy2');
    const pkg = join(ROOT, 'package.json');
    expect((await add(org2, { name: 'spy2', ...spyStdio(pkg) })).error).toBeUndefined();
    const look2 = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org2, tool_name: 'look', args: {} },
      { timeoutMs: 30_000 },
    );
    expect(JSON.parse(look2.func_return).files[pkg]).toMatch(/^refused: ENOENT/);
  });
});
