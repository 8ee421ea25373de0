/**
 * The `toolplane` CLI through its built binary (dist/tools/cli/main.js) against the stack: JSON
 * output parsed, table output's shape, exit codes, secrets kept out of argv and output, offline
 * schema commands, and `doctor` reporting a stopped service of a stack of its own.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { natsUrl, ROOT } from '../support/env';
import { ensureTestIdentity, operatorToken } from '../support/identity';
import { gatewayUrl, mcpClient } from '../support/gateway';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { COMPILE_CACHE, startStack, type Stack } from '../support/stack';

const BIN = join(ROOT, 'dist', 'tools', 'cli', 'main.js');
const tool = (name: string, body = 'return a + b') =>
  `def ${name}(a: int, b: int = 2) -> int:\n    """Add two integers.\n\n    Args:\n        a (int): The first number.\n        b (int): The second number.\n    """\n    print("hello from ${name}")\n    ${body}\n`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  argv: string[];
}

/** Runs the binary with `args` (and `input` on stdin), a clean env plus `env`. */
function cli(args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const argv = [BIN, ...args];
    const p = spawn(process.execPath, argv, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        NODE_COMPILE_CACHE: COMPILE_CACHE,
        TOOLPLANE_CONFIG: join(tmpdir(), 'no-such-profiles.json'),
        ...opts.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr, argv }));
    p.stdin.end(opts.input ?? '');
  });
}

/**
 * Runs the binary on a terminal (a pty made by util-linux `script`) and types `answer` once `prompt`
 * shows: what a person at a prompt does. The output is everything the terminal showed.
 */
function cliOnTerminal(
  args: string[],
  env: Record<string, string>,
  prompt: string,
  answer: string,
): Promise<{ code: number | null; shown: string }> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const p = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        TERM: 'dumb',
        TOOLPLANE_CONFIG: join(tmpdir(), 'no-such-profiles.json'),
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let shown = '';
    let typed = false;
    p.stdout.on('data', (d) => {
      shown += d;
      if (!typed && shown.includes(prompt)) {
        typed = true;
        p.stdin.write(`${answer}\r`);
      }
    });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, shown }));
  });
}

describe('toolplane CLI', () => {
  const org = uniqueOrg('cli');
  const dir = mkdtempSync(join(tmpdir(), 'tp-cli-'));
  let raw: RawClient;
  let env: Record<string, string>;

  beforeAll(async () => {
    raw = await RawClient.connect(testPrefix());
    env = {
      TOOLPLANE_NATS_URL: natsUrl(),
      TOOLPLANE_TOKEN: await raw.tokenFor(org),
      TOOLPLANE_ORG: org,
      TOOLPLANE_PREFIX: testPrefix(),
      TOOLPLANE_KEYS_DIR: ensureTestIdentity().keysDir,
    };
    writeFileSync(join(dir, 'cli_add.py'), tool('cli_add'));
    mkdtempSync(join(dir, 'sub'));
  });
  afterAll(() => raw?.close());

  it('pushes a file and a directory, lists (JSON and table), gets, runs and removes tools with meaningful exit codes', async () => {
    const one = await cli(['--json', 'tools', 'push', join(dir, 'cli_add.py'), '--tag', 'cli'], { env });
    expect(one.code).toBe(0);
    const pushed = JSON.parse(one.stdout).tools;
    expect(pushed).toEqual([
      expect.objectContaining({
        name: 'cli_add',
        id: expect.stringMatching(/^tool-/),
        health: expect.stringMatching(/STRICT_COMPLIANT|NON_STRICT_ONLY/),
        reasons: expect.any(Array),
      }),
    ]);

    // Table mode: the health, then why it is not strict.
    const humanPush = await cli(['tools', 'push', join(dir, 'cli_add.py'), '--tag', 'cli'], { env });
    expect(humanPush.code).toBe(0);
    const pushLines = humanPush.stdout.trimEnd().split('\n');
    expect(pushLines[0]!.split(/\s{2,}/)).toEqual(['FILE', 'NAME', 'ID', 'HEALTH', 'ERROR']);
    expect(pushLines[1]).toMatch(/cli_add\.py\s+cli_add\s+tool-[0-9a-f-]+\s+NON_STRICT_ONLY\s+-$/);
    expect(pushLines).toContain(
      "  cli_add: root: strict mode requires every property in 'required' (make optional ones nullable instead): b",
    );

    const many = mkdtempSync(join(dir, 'many-'));
    for (const n of ['cli_one', 'cli_two']) writeFileSync(join(many, `${n}.py`), tool(n));
    writeFileSync(join(many, 'README.md'), 'not a tool');
    const dirPush = await cli(['--json', 'tools', 'push', many, '--tag', 'cli'], { env });
    expect(dirPush.code).toBe(0);
    expect(JSON.parse(dirPush.stdout).tools.map((t: { name: string }) => t.name)).toEqual(['cli_one', 'cli_two']);

    const ls = await cli(['--json', 'tools', 'ls', '--tag', 'cli'], { env });
    expect(ls.code).toBe(0);
    expect(
      JSON.parse(ls.stdout)
        .tools.map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(['cli_add', 'cli_one', 'cli_two']);

    const table = await cli(['tools', 'ls', '--tag', 'cli'], { env });
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual(['NAME', 'ID', 'TOOL_TYPE', 'TAGS', 'DESCRIPTION']);
    expect(lines).toHaveLength(4);
    for (const l of lines.slice(1))
      expect(l).toMatch(/^cli_\w+\s+tool-[0-9a-f-]+\s+custom\s+cli\s+Add two integers\.$/);

    const get = await cli(['--json', 'tools', 'get', 'cli_add'], { env });
    expect(JSON.parse(get.stdout).tool).toMatchObject({ name: 'cli_add', id: pushed[0].id });

    const run = await cli(['--json', 'tools', 'run', 'cli_add', '--args', '{"a": 40, "b": 2}'], { env });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'success',
      func_return: 42,
      stdout: [expect.stringContaining('hello from cli_add')],
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    writeFileSync(join(dir, 'args.json'), '{"a": 1}');
    const human = await cli(['tools', 'run', 'cli_add', '--args-file', join(dir, 'args.json')], {
      env: { ...env, TOOLPLANE_JAEGER_URL: 'http://jaeger.local:16686' },
    });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^status\s+success$/m);
    expect(human.stdout).toMatch(/^result\s+3$/m);
    expect(human.stdout).toMatch(/^jaeger\s+http:\/\/jaeger\.local:16686\/trace\/[0-9a-f]{32}$/m);
    expect(human.stdout).toContain('--- stdout\nhello from cli_add');

    const rm = await cli(['--json', 'tools', 'rm', 'cli_add'], { env });
    expect(rm.code).toBe(0);
    const gone = await cli(['--json', 'tools', 'get', 'cli_add'], { env });
    expect(gone.code).toBe(3);
    expect(JSON.parse(gone.stdout).error).toMatchObject({ code: 'TOOL_NOT_FOUND', retryable: false });
  });

  it('tails the events of the org as JSON lines', async () => {
    writeFileSync(join(dir, 'cli_evented.py'), tool('cli_evented'));
    // Created, then updated: two events of this org whatever else the file ran.
    for (let i = 0; i < 2; i++)
      expect((await cli(['tools', 'push', join(dir, 'cli_evented.py')], { env })).code).toBe(0);
    // From the start of the stream (so the push above is in it), this org only, two events.
    const tail = await cli(['--json', 'events', 'tail', '--entity', 'tool', '--all', '--limit', '2'], { env });
    expect(tail.code).toBe(0);
    const lines = tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const e of lines)
      expect(e).toMatchObject({
        subject: expect.stringMatching(/^toolplane\.v1\.events\.tool\.(created|updated|deleted)$/),
        payload: { org_id: org },
      });
  });

  it('exits 2 on a usage error, 4 on a bad token and 5 when nothing answers', async () => {
    expect((await cli(['tools', 'ls'], { env: { ...env, TOOLPLANE_TOKEN: '' } })).code).toBe(2);
    expect((await cli(['tools', 'frobnicate'], { env })).code).toBe(2);
    const bad = await cli(['--json', 'tools', 'ls'], { env: { ...env, TOOLPLANE_TOKEN: 'a.b.c' } });
    expect(bad.code).toBe(4);
    expect(JSON.parse(bad.stdout).error.code).toBe('UNAUTHENTICATED');
    const none = await cli(['--json', 'tools', 'ls'], { env: { ...env, TOOLPLANE_PREFIX: `${testPrefix()}nobody` } });
    expect(none.code).toBe(5);
    expect(JSON.parse(none.stdout).error.code).toBe('NO_RESPONDERS');
  });

  it('reads a secret from stdin, never from argv, and never prints it', async () => {
    const value = `s3cr3t-${Math.random().toString(36).slice(2)}`;
    const refused = await cli(['secrets', 'set', 'CLI_KEY', value], { env });
    expect(refused.code).toBe(2);
    const set = await cli(['--json', 'secrets', 'set', 'CLI_KEY', '--description', 'from the cli'], {
      env,
      input: `${value}\n`,
    });
    expect(set.code).toBe(0);
    expect(set.argv.join(' ')).not.toContain(value);
    expect(JSON.parse(set.stdout).secret).toMatchObject({ key: 'CLI_KEY', scope: 'sandbox' });
    const ls = await cli(['--json', 'secrets', 'ls'], { env });
    expect(JSON.parse(ls.stdout).secrets.map((s: { key: string }) => s.key)).toContain('CLI_KEY');
    const table = await cli(['secrets', 'ls'], { env });
    expect(table.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual([
      'KEY',
      'SCOPE',
      'AGENT_ID',
      'USER_ID',
      'DESCRIPTION',
      'UPDATED_AT',
    ]);
    for (const r of [set, ls, table]) expect(r.stdout + r.stderr).not.toContain(value);
    // On a terminal: a prompt, and what is typed is not echoed.
    const typed = `typed-${Math.random().toString(36).slice(2)}`;
    const prompted = await cliOnTerminal(['secrets', 'set', 'CLI_TYPED'], env, 'value of CLI_TYPED: ', typed);
    expect(prompted.code).toBe(0);
    expect(prompted.shown).toContain('stored CLI_TYPED (sandbox)');
    expect(prompted.shown).not.toContain(typed);
    expect(
      JSON.parse((await cli(['--json', 'secrets', 'ls'], { env })).stdout).secrets.map((s: { key: string }) => s.key),
    ).toContain('CLI_TYPED');
    expect((await cli(['--json', 'secrets', 'rm', 'CLI_TYPED'], { env })).code).toBe(0);
    // The value reached the store: a tool run sees it in its env.
    // (Its hash: tool output that equals a secret is masked.)
    writeFileSync(
      join(dir, 'cli_env.py'),
      'def cli_env() -> str:\n    """Env."""\n    import hashlib, os\n    return hashlib.sha256(os.environ.get("CLI_KEY", "").encode()).hexdigest()\n',
    );
    expect((await cli(['tools', 'push', join(dir, 'cli_env.py')], { env })).code).toBe(0);
    const seen = await cli(['--json', 'tools', 'run', 'cli_env'], { env });
    expect(JSON.parse(seen.stdout).func_return).toBe(createHash('sha256').update(value).digest('hex'));
    expect((await cli(['--json', 'secrets', 'rm', 'CLI_KEY'], { env })).code).toBe(0);
    // An end user's secret: --user on set, ls and rm (one owner: --agent with --user is refused).
    const mine = await cli(['--json', 'secrets', 'set', 'CLI_USER_KEY', '--user', 'cli-alice'], {
      env,
      input: `${value}-user\n`,
    });
    expect(JSON.parse(mine.stdout).secret).toMatchObject({
      key: 'CLI_USER_KEY',
      scope: 'user',
      user_id: 'cli-alice',
      agent_id: null,
    });
    expect(
      JSON.parse((await cli(['--json', 'secrets', 'ls', '--user', 'cli-alice'], { env })).stdout).secrets.map(
        (s: { key: string }) => s.key,
      ),
    ).toEqual(['CLI_USER_KEY']);
    expect(JSON.parse((await cli(['--json', 'secrets', 'ls', '--user', 'cli-bob'], { env })).stdout).secrets).toEqual(
      [],
    );
    expect((await cli(['secrets', 'set', 'X', '--user', 'u', '--agent', 'a'], { env, input: 'v\n' })).code).not.toBe(0);
    expect((await cli(['--json', 'secrets', 'rm', 'CLI_USER_KEY', '--user', 'cli-alice'], { env })).code).toBe(0);
    expect(JSON.parse((await cli(['--json', 'secrets', 'ls', '--user', 'cli-alice'], { env })).stdout).secrets).toEqual(
      [],
    );
  });

  it('sets, gets and removes the webhook (its signing secret from stdin), sandbox configs, MCP servers and tokens', async () => {
    const signing = `whsec-${Math.random().toString(36).slice(2)}-0123456789`;
    const set = await cli(['--json', 'webhook', 'set', 'http://127.0.0.1:9/hook', '--timeout-ms', '500'], {
      env,
      input: signing,
    });
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout).webhook).toMatchObject({ url: 'http://127.0.0.1:9/hook', timeout_ms: 500 });
    const get = await cli(['webhook', 'get'], { env });
    expect(get.stdout).toMatch(/^url\s+http:\/\/127\.0\.0\.1:9\/hook$/m);
    for (const r of [set, get]) expect(r.stdout + r.stderr).not.toContain(signing);
    expect((await cli(['webhook', 'rm'], { env })).code).toBe(0);
    expect((await cli(['--json', 'webhook', 'get'], { env })).code).toBe(3);

    writeFileSync(join(dir, 'local.json'), JSON.stringify({ timeout_ms: 5000, memory_mb: 256 }));
    expect((await cli(['--json', 'sandbox-config', 'set', 'local', join(dir, 'local.json')], { env })).code).toBe(0);
    const cfg = await cli(['--json', 'sandbox-config', 'get', 'local'], { env });
    expect(JSON.parse(cfg.stdout).sandbox_config).toMatchObject({ provider: 'local' });
    const all = await cli(['sandbox-config', 'get'], { env });
    expect(all.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual(['PROVIDER', 'FINGERPRINT', 'CONFIG']);

    const servers = await cli(['--json', 'mcp', 'ls'], { env });
    expect(JSON.parse(servers.stdout)).toEqual({ servers: [] });
    expect((await cli(['--json', 'mcp', 'sync', 'nope'], { env })).code).toBe(3);
    expect(JSON.parse((await cli(['--json', 'connections', 'list', '--user', 'someone'], { env })).stdout)).toEqual({
      connections: [],
    });
    expect((await cli(['--json', 'connections', 'revoke', 'nope', '--user', 'someone'], { env })).code).toBe(3);
    expect((await cli(['connections', 'revoke', 'nope'], { env })).code).toBe(2);

    // An org token without admin may not mint tokens: exit 4.
    expect((await cli(['--json', 'token', 'create', '--name', 'x'], { env })).code).toBe(4);
    const operator = { ...env, TOOLPLANE_TOKEN: operatorToken() };
    const created = await cli(['--json', 'token', 'create', '--name', 'cli-made', '--scopes', 'tools:read'], {
      env: operator,
    });
    expect(created.code).toBe(0);
    const { token_id } = JSON.parse(created.stdout);
    const tokens = await cli(['--json', 'token', 'ls'], { env: operator });
    expect(JSON.parse(tokens.stdout).tokens).toEqual(
      expect.arrayContaining([expect.objectContaining({ token_id, name: 'cli-made' })]),
    );
    expect((await cli(['--json', 'token', 'revoke', token_id], { env: operator })).code).toBe(0);
    // A token bound to an end user: --user, shown in the list.
    const bound = JSON.parse(
      (
        await cli(
          ['--json', 'token', 'create', '--name', 'cli-bound', '--scopes', 'tools:read', '--user', 'cli-alice'],
          { env: operator },
        )
      ).stdout,
    );
    expect(bound).toMatchObject({ user_id: 'cli-alice' });
    const listed = JSON.parse((await cli(['--json', 'token', 'ls'], { env: operator })).stdout).tokens;
    expect(listed.find((t: { token_id: string }) => t.token_id === bound.token_id)).toMatchObject({
      name: 'cli-bound',
      user_id: 'cli-alice',
    });
    expect((await cli(['--json', 'token', 'revoke', bound.token_id], { env: operator })).code).toBe(0);
  });

  it('adds and resyncs an MCP server with a live view of every page, then the report; --json prints only the report', async () => {
    const fake = new FakeMcpServer();
    fake.tools = Array.from({ length: 7 }, (_, i) => echoTool(`cli_mcp_${i}`));
    fake.pageSize = 3;
    await fake.start();
    try {
      writeFileSync(
        join(dir, 'server.json'),
        JSON.stringify({ name: 'cli-paged', transport: 'streamable_http', url: fake.url }),
      );
      const added = await cli(['mcp', 'add', join(dir, 'server.json')], { env });
      expect(added.code).toBe(0);
      expect(added.stdout).toMatch(/^cli-paged: 3 pages, 7 tools listed, \d+ ms$/m);
      expect(added.stdout).toMatch(/^added\s+7$/m);

      // The server changes: one tool gone, one new, one with a broken schema; 8 tools in 3 pages.
      fake.tools = [
        ...fake.tools.slice(1),
        echoTool('cli_mcp_new'),
        { def: { name: 'cli_mcp_broken', description: 'Its schema is a string.', inputSchema: 'not a schema' } },
      ];
      const sync = await cli(['mcp', 'sync', 'cli-paged'], { env });
      expect(sync.code).toBe(0);
      // Live view (stderr, a line per step when not on a terminal): every page listed, then the write.
      const steps = sync.stderr.split('\n').filter((l) => /^(listing|writing) /.test(l));
      expect(steps.filter((l) => l.startsWith('listing'))).toEqual([
        'listing  page 1 · 3 tools listed',
        'listing  page 2 · 6 tools listed',
        'listing  page 3 · 8 tools listed',
      ]);
      expect(steps).toContain('writing  8 tools (1 invalid) · 0/1 messages');
      expect(steps.at(-1)).toBe('writing  8 tools (1 invalid) · 1/1 messages');
      // Then the report on stdout.
      expect(sync.stdout).toMatch(/^cli-paged: 3 pages, 8 tools listed, \d+ ms$/m);
      expect(sync.stdout).toMatch(/^added\s+2$/m);
      expect(sync.stdout).toMatch(/^removed\s+1$/m);
      expect(sync.stdout).toMatch(/^invalid\s+1$/m);
      expect(sync.stdout).toMatch(/^ {2}invalid cli_mcp_broken: .+$/m);

      const json = await cli(['--json', 'mcp', 'sync', 'cli-paged'], { env });
      expect(json.code).toBe(0);
      expect(json.stderr).toBe('');
      expect(JSON.parse(json.stdout)).toMatchObject({
        server: { name: 'cli-paged', tool_count: 8 },
        sync: { pages: 3, listed: 8, added: 0, removed: 0, invalid: 1, complete: true },
      });
      expect((await cli(['--json', 'mcp', 'rm', 'cli-paged'], { env })).code).toBe(0);
    } finally {
      await fake.stop();
    }
  });

  it('prints an MCP endpoint that a client connects to, and client configs to paste, never with the token', async () => {
    const token = env.TOOLPLANE_TOKEN!;
    await raw.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: tool('cli_mcp') } }, 30_000);
    await raw.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: org, agent_id: 'cli agent', tool_names: ['cli_mcp'] },
      30_000,
    );
    const json = await cli(['--json', 'mcp-url', '--agent', 'cli agent'], {
      env: { ...env, TOOLPLANE_GATEWAY_URL: gatewayUrl() },
    });
    expect(json.code).toBe(0);
    const r = JSON.parse(json.stdout);
    expect(r.url).toBe(`${gatewayUrl()}/mcp/agents/cli%20agent`);
    // The URL printed is the one that works: the SDK's client lists the agent's tools there with the org token.
    const { client } = await mcpClient(r.url, token);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['cli_mcp']);
    } finally {
      await client.close();
    }
    expect(Object.keys(r.configs).sort()).toEqual([
      'claude_code',
      'claude_desktop',
      'cursor',
      'mcp_json',
      'openai_agents_python',
      'openai_agents_typescript',
    ]);
    expect(r.configs.claude_code).toBe(
      `claude mcp add --transport http toolplane-cli-agent ${r.url} --header "Authorization: Bearer $TOOLPLANE_TOKEN"`,
    );
    expect(r.configs.mcp_json).toEqual({
      mcpServers: {
        'toolplane-cli-agent': { type: 'http', url: r.url, headers: { Authorization: 'Bearer ${TOOLPLANE_TOKEN}' } },
      },
    });
    expect(r.configs.cursor).toEqual({
      mcpServers: {
        'toolplane-cli-agent': { url: r.url, headers: { Authorization: 'Bearer ${env:TOOLPLANE_TOKEN}' } },
      },
    });
    expect(r.configs.claude_desktop.mcpServers['toolplane-cli-agent'].args).toEqual([
      '-y',
      'mcp-remote',
      r.url,
      '--header',
      'Authorization:${TOOLPLANE_AUTH_HEADER}',
    ]);
    expect(r.configs.openai_agents_python).toContain(
      `params={"url": "${r.url}", "headers": {"Authorization": f"Bearer {os.environ['TOOLPLANE_TOKEN']}"}},`,
    );
    expect(r.configs.openai_agents_typescript).toContain(
      'requestInit: { headers: { Authorization: `Bearer ${process.env.TOOLPLANE_TOKEN}` } },',
    );

    // People: the URL first, then each client's form; the base from the environment, the token from another variable.
    const human = await cli(['mcp-url', '--toolset', 'support', '--token-env', 'ACME_MCP_TOKEN'], {
      env: { ...env, TOOLPLANE_GATEWAY_URL: 'https://mcp.example.com/' },
    });
    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[0]).toBe('https://mcp.example.com/mcp/toolsets/support');
    expect(human.stdout).toContain(
      'claude mcp add --transport http toolplane-support https://mcp.example.com/mcp/toolsets/support --header "Authorization: Bearer $ACME_MCP_TOKEN"',
    );
    expect(human.stdout).toContain('"Authorization": "Bearer ${env:ACME_MCP_TOKEN}"');
    expect(human.stdout.match(/^# .+$/gm)).toHaveLength(6);
    expect(human.stdout).not.toContain('TOOLPLANE_TOKEN');
    // --gateway over the environment; with no base at all, the local gateway.
    const flag = await cli(['--json', 'mcp-url', '--agent', 'a', '--gateway', 'http://gw.internal:9000'], {
      env: { ...env, TOOLPLANE_GATEWAY_URL: 'https://mcp.example.com' },
    });
    expect(JSON.parse(flag.stdout).url).toBe('http://gw.internal:9000/mcp/agents/a');
    const local = await cli(['--json', 'mcp-url', '--agent', 'a'], { env });
    expect(JSON.parse(local.stdout).url).toBe('http://127.0.0.1:8090/mcp/agents/a');
    // The token is never printed, even given in the environment and on the command line.
    const withFlag = await cli(['--token', token, 'mcp-url', '--agent', 'a'], { env });
    for (const run of [json, human, flag, local, withFlag]) expect(run.stdout + run.stderr).not.toContain(token);
    for (const args of [
      ['mcp-url'],
      ['mcp-url', '--agent', 'a', '--toolset', 'b'],
      ['mcp-url', '--agent', 'a', '--gateway', 'ftp://x'],
      ['mcp-url', '--agent', 'a', '--token-env', 'not a name'],
    ]) {
      expect([args, (await cli(args, { env })).code]).toEqual([args, 2]);
    }
  });

  it('generates and checks schemas offline, with no stack reachable', async () => {
    const offline = { TOOLPLANE_NATS_URL: 'nats://127.0.0.1:1' };
    const gen = await cli(['--json', 'schema', 'gen', join(dir, 'cli_add.py')], { env: offline });
    expect(gen.code).toBe(0);
    expect(JSON.parse(gen.stdout)).toMatchObject({
      health: 'NON_STRICT_ONLY',
      json_schema: { name: 'cli_add', parameters: { required: ['a'] } },
    });
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ name: 'x', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } } }),
    );
    const bad = await cli(['--json', 'schema', 'check', join(dir, 'bad.json')], { env: offline });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({
      health: 'INVALID',
      reasons: expect.arrayContaining([expect.stringContaining('nonsense')]),
    });
  });

  describe('doctor', () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({
        prefix: `${testPrefix()}doc`,
        databaseUrl: testDatabaseUrl(),
        apps: ['schema', 'registry'],
        env: { LOG_LEVEL: 'warn' },
      });
    });
    afterAll(() => stack?.stop());

    it('reports every service ready, then the one that was stopped, with what to do', async () => {
      const ports = () => [...stack.apps.values()].map((a) => `${a.name}=${a.healthPort}`).join(',');
      const health = ports();
      const args = ['--json', 'doctor', '--health', health, '--database-url', testDatabaseUrl()];
      const before = JSON.parse((await cli(args, { env })).stdout);
      expect(before.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ check: 'nats', ok: true }),
          expect.objectContaining({ check: 'postgres', ok: true }),
          expect.objectContaining({ check: 'schema', ok: true }),
          expect.objectContaining({ check: 'registry', ok: true }),
          expect.objectContaining({ check: 'time skew' }),
          expect.objectContaining({ check: 'bubblewrap' }),
        ]),
      );
      await stack.stopApp('schema');
      const after = await cli(args, { env });
      expect(after.code).toBe(1);
      const report = JSON.parse(after.stdout);
      expect(report.ok).toBe(false);
      expect(report.checks.find((c: { check: string }) => c.check === 'schema')).toMatchObject({
        ok: false,
        fix: expect.stringContaining('start schema'),
      });
      expect(report.checks.find((c: { check: string }) => c.check === 'registry')).toMatchObject({ ok: true });
      const table = await cli(args.slice(1), { env });
      expect(table.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual(['CHECK', 'OK', 'DETAIL', 'FIX']);
      expect(table.stdout).toMatch(/^schema\s+FAIL\s+/m);
    });
  });
});
