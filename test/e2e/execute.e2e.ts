import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { hostProcessesWith } from '../support/processes';
import { ADD, ROLL_D20, pythonTool } from '../support/tools';

describe('tools.execute end to end', () => {
  let client: RawClient;
  const org = uniqueOrg('exec');
  const register = (source_code: string, extra: Record<string, unknown> = {}) =>
    client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code, ...extra } }).then((r) => {
      if (r.error) throw new Error(JSON.stringify(r.error));
      return r.tool;
    });
  const execute = (body: Record<string, unknown>, timeoutMs = 20_000) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs });

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    await register(ROLL_D20);
    await register(ADD);
  });
  afterAll(() => client.close());

  it('runs roll_d20 and returns its value, stdout and a trace id', async () => {
    const r = await execute({ tool_name: 'roll_d20', args: {} });
    expect(r.status).toBe('success');
    expect(r.func_return).toMatch(/^You rolled a ([1-9]|1[0-9]|20)$/);
    expect(r.stdout).toEqual(['rolling the die\n']);
    expect(r.stderr).toEqual([]);
    expect(r.provider).toBe('local');
    expect(r.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(r.duration_ms).toBeGreaterThan(0);
    expect(r.error).toBeUndefined();
  });

  it('runs add with and without its default, by name and by id', async () => {
    expect((await execute({ tool_name: 'add', args: { a: 40 } })).func_return).toBe(42);
    expect((await execute({ tool_name: 'add', args: { a: 1, b: 5 } })).func_return).toBe(6);
    const { tool } = await client.req('toolplane.v1.tools.get', { org_id: org, name: 'add' });
    expect((await execute({ tool_id: tool.id, args: { a: -3, b: 3 } })).func_return).toBe(0);
  });

  it('refuses bad arguments with INVALID_ARGUMENTS and does not run the tool', async () => {
    const missing = await execute({ tool_name: 'add', args: {} });
    expect(missing.error).toMatchObject({ code: 'INVALID_ARGUMENTS', retryable: false });
    expect(missing.error.message).toContain("'a'");
    const wrongType = await execute({ tool_name: 'add', args: { a: 'one' } });
    expect(wrongType.error.code).toBe('INVALID_ARGUMENTS');
    expect(wrongType.error.details.errors[0].path).toBe('/a');
    const unknown = await execute({ tool_name: 'add', args: { a: 1, c: 3 } });
    expect(unknown.error.code).toBe('INVALID_ARGUMENTS');
    expect(unknown.error.message).toContain("unknown argument 'c'");
  });

  it('answers TOOL_NOT_FOUND for an unknown tool and for a tool of another org', async () => {
    expect((await execute({ tool_name: 'nope', args: {} })).error.code).toBe('TOOL_NOT_FOUND');
    const { tool } = await client.req('toolplane.v1.tools.get', { org_id: org, name: 'add' });
    const r = await client.req('toolplane.v1.tools.execute', {
      org_id: uniqueOrg('intruder'),
      tool_id: tool.id,
      args: { a: 1 },
    });
    expect(r.error.code).toBe('TOOL_NOT_FOUND');
  });

  it('reports a tool that raises as status error with the traceback in stderr', async () => {
    await register(pythonTool('explode', 'raise ValueError("bad input here")'));
    const r = await execute({ tool_name: 'explode', args: {} });
    expect(r.status).toBe('error');
    expect(r.func_return).toBe('Error executing function explode: ValueError: bad input here');
    expect(r.error).toEqual({ code: 'TOOL_EXCEPTION', message: 'bad input here' });
    expect(r.stderr.join('')).toMatch(/Traceback \(most recent call last\)[\s\S]*ValueError: bad input here/);
  });

  it('stops a tool that never returns at its timeout and leaves no process behind', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.25`; // a background `sleep <marker>` must not survive the timeout
    await register(
      pythonTool(
        'spin',
        `import subprocess\nsubprocess.Popen(["/bin/sleep", "${marker}"])\nprint("spinning", flush=True)\nwhile True:\n    pass`,
      ),
    );
    const r = await execute({ tool_name: 'spin', args: {}, timeout_ms: 1500 });
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('EXECUTION_TIMEOUT');
    expect(r.func_return).toMatch(/^Error executing function spin: TimeoutError: /);
    expect(r.stdout.join('')).toBe('spinning\n');
    expect(hostProcessesWith(marker)).toEqual([]);
  });

  it('caps 10 MB of printed output and still returns the value', async () => {
    await register(pythonTool('shout', 'print("x" * 10_000_000)\nreturn "done"'));
    const r = await execute({ tool_name: 'shout', args: {} });
    expect(r.status).toBe('success');
    expect(r.func_return).toBe('done');
    const out = r.stdout.join('');
    expect(out.length).toBeLessThan(300 * 1024);
    expect(out).toContain('output truncated');
  });

  it("truncates a return over the tool's return_char_limit with the seeds' note", async () => {
    await register(pythonTool('long_text', 'return "y" * 500'), { return_char_limit: 100 });
    const r = await execute({ tool_name: 'long_text', args: {} });
    expect(r.func_return).toBe(
      `${'y'.repeat(100)}... [NOTE: function output was truncated since it exceeded the character limit (500 > 100)]`,
    );
  });

  it('gives the tool only the declared env and the reserved ids, never the runner environment', async () => {
    await register(pythonTool('env_dump', 'import os\nreturn dict(os.environ)'));
    const r = await execute({
      tool_name: 'env_dump',
      args: {},
      env: { GREETING: 'hi', TOOLPLANE_ORG_ID: 'spoofed' },
      agent_id: 'agent-7',
    });
    expect(r.status).toBe('success');
    expect(r.func_return).toMatchObject({ GREETING: 'hi', TOOLPLANE_ORG_ID: org, TOOLPLANE_AGENT_ID: 'agent-7' });
    expect(r.func_return.TOOLPLANE_TOOL_ID).toMatch(/^tool-/);
    for (const leaked of ['NATS_URL', 'DATABASE_URL', 'SUBJECT_PREFIX', 'HEALTH_PORT'])
      expect(r.func_return).not.toHaveProperty(leaked);
  });

  it('ignores a forged result printed on stdout', async () => {
    await register(pythonTool('forger', 'print(\'{"status": "success", "func_return": "forged"}\')\nreturn "real"'));
    const r = await execute({ tool_name: 'forger', args: {} });
    expect(r.func_return).toBe('real');
  });

  it('runs the new version of a tool as soon as it is updated (cache evicted by the event)', async () => {
    await register(pythonTool('version', 'return 1'));
    expect((await execute({ tool_name: 'version', args: {} })).func_return).toBe(1);
    await register(pythonTool('version', 'return 2'));
    expect((await execute({ tool_name: 'version', args: {} })).func_return).toBe(2);
    const { tool } = await client.req('toolplane.v1.tools.get', { org_id: org, name: 'version' });
    await client.req('toolplane.v1.tools.delete', { org_id: org, id: tool.id });
    expect((await execute({ tool_name: 'version', args: {} })).error.code).toBe('TOOL_NOT_FOUND');
  });

  it('runs concurrent calls independently', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => execute({ tool_name: 'add', args: { a: i, b: i } })),
    );
    expect(results.map((r) => r.func_return)).toEqual(Array.from({ length: 12 }, (_, i) => 2 * i));
  });
});
