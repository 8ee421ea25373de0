/**
 * Built-in tools (issue 18; ../shared/BUILTINS.md): present in every org without registration,
 * with the reference's names and schemas, read-only for tenants, attachable like any tool;
 * run_code runs on the provider runners (python, js, ts), the core families go to their client.
 */
import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';

type Row = [name: string, toolType: string, params: string[], required: string[], parallel: boolean];

/** BUILTINS.md, as a table: name, tool_type, parameters, required set, parallel-safe. */
const TABLE: Row[] = [
  ['run_code', 'letta_builtin', ['code', 'language'], ['code', 'language'], true],
  [
    'web_search',
    'letta_builtin',
    [
      'query',
      'num_results',
      'category',
      'include_text',
      'include_domains',
      'exclude_domains',
      'start_published_date',
      'end_published_date',
      'user_location',
    ],
    ['query'],
    true,
  ],
  ['fetch_webpage', 'letta_builtin', ['url'], ['url'], true],
  ['send_message', 'letta_core', ['message'], ['message'], false],
  ['conversation_search', 'letta_core', ['query', 'roles', 'limit', 'start_date', 'end_date'], [], true],
  ['archival_memory_insert', 'letta_core', ['content', 'tags'], ['content'], false],
  [
    'archival_memory_search',
    'letta_core',
    ['query', 'tags', 'tag_match_mode', 'top_k', 'start_datetime', 'end_datetime'],
    ['query'],
    true,
  ],
  ['core_memory_append', 'letta_memory_core', ['label', 'content'], ['label', 'content'], false],
  [
    'core_memory_replace',
    'letta_memory_core',
    ['label', 'old_content', 'new_content'],
    ['label', 'old_content', 'new_content'],
    false,
  ],
  ['memory_insert', 'letta_memory_core', ['label', 'new_string', 'insert_line'], ['label', 'new_string'], false],
  [
    'memory_replace',
    'letta_memory_core',
    ['label', 'old_string', 'new_string'],
    ['label', 'old_string', 'new_string'],
    false,
  ],
  ['memory_rethink', 'letta_memory_core', ['label', 'new_memory'], ['label', 'new_memory'], false],
  ['memory_finish_edits', 'letta_memory_core', [], [], false],
];

const CATEGORIES = [
  'company',
  'research paper',
  'news',
  'pdf',
  'github',
  'tweet',
  'personal site',
  'linkedin profile',
  'financial report',
];

interface RunCodeOutput {
  results: string[];
  logs: { stdout: string[]; stderr: string[] };
  error?: { name: string; value: string; traceback: string };
}

describe('built-in tools', () => {
  let client: RawClient;
  const org = uniqueOrg('builtins');
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const call = (subject: string, body: Record<string, unknown>, o = org) =>
    client.req(`toolplane.v1.${subject}`, { org_id: o, ...body }, { timeoutMs: 60_000 });
  const listAll = async (o: string, extra: Record<string, unknown> = {}) => {
    const tools: any[] = [];
    let cursor: string | undefined;
    do {
      const page = ok(await call('tools.list', { limit: 200, ...extra, ...(cursor ? { cursor } : {}) }, o));
      tools.push(...page.tools);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return tools;
  };
  const runCode = async (code: string, language: string, extra: Record<string, unknown> = {}) =>
    call('tools.execute', { tool_name: 'run_code', args: { code, language }, ...extra });
  const output = (r: any): RunCodeOutput => {
    expect(typeof r.func_return).toBe('string');
    return JSON.parse(r.func_return);
  };

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(async () => {
    await client?.close();
  });

  it('a brand-new org has every built-in with the reference schema (BUILTINS.md, a table)', async () => {
    const fresh = uniqueOrg('fresh');
    const tools = await listAll(fresh, { tool_types: ['letta_builtin', 'letta_core', 'letta_memory_core'] });
    expect(tools).toHaveLength(TABLE.length);
    // Without tool_types the list is what the org registered itself: nothing yet.
    expect(await listAll(fresh)).toEqual([]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const [name, toolType, params, required, parallel] of TABLE) {
      const t = byName.get(name);
      expect({ name, tool: t && { ...t, id: undefined, json_schema: undefined, description: undefined } }).toEqual({
        name,
        tool: {
          id: undefined,
          tool_type: toolType,
          name,
          tags: [toolType],
          source_type: 'python',
          source_code: null,
          description: undefined,
          json_schema: undefined,
          args_json_schema: null,
          return_char_limit: 50_000,
          pip_requirements: null,
          npm_requirements: null,
          default_requires_approval: false,
          enable_parallel_execution: parallel,
          created_by_id: null,
          last_updated_by_id: null,
          metadata_: { builtin: { version: expect.any(Number) } },
          project_id: null,
        },
      });
      expect(t.id).toMatch(/^tool-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(t.json_schema).toMatchObject({ name, description: t.description, parameters: { type: 'object' } });
      expect({ name, params: Object.keys(t.json_schema.parameters.properties) }).toEqual({ name, params });
      expect({ name, required: t.json_schema.parameters.required }).toEqual({ name, required });
    }
    const schemaOf = (n: string) => byName.get(n).json_schema.parameters.properties;
    expect(schemaOf('run_code').language).toMatchObject({ type: 'string', enum: ['python', 'js', 'ts', 'r', 'java'] });
    expect(schemaOf('web_search').category).toMatchObject({ type: 'string', enum: CATEGORIES });
    expect(schemaOf('web_search').num_results).toMatchObject({ type: 'integer', default: 10 });
    expect(schemaOf('web_search').include_domains).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(schemaOf('memory_insert').insert_line).toMatchObject({ type: 'integer', default: -1 });
  });

  it('lists them by tool type, with ids stable per org (the same on every read, another in another org)', async () => {
    const builtins = await listAll(org, { tool_types: ['letta_builtin'] });
    expect(builtins.map((t) => t.name).sort()).toEqual(['fetch_webpage', 'run_code', 'web_search']);
    const again = ok(await call('tools.get', { name: 'run_code' })).tool;
    expect(again.id).toBe(builtins.find((t) => t.name === 'run_code').id);
    const other = ok(await call('tools.get', { name: 'run_code' }, uniqueOrg('other'))).tool;
    expect(other.id).not.toBe(again.id);
    expect(ok(await call('tools.get', { id: again.id }, org)).tool.name).toBe('run_code');
    const core = await listAll(org, { tool_types: ['letta_core', 'letta_memory_core'] });
    expect(core.map((t) => t.name).sort()).toEqual(
      TABLE.filter((r) => r[1] !== 'letta_builtin')
        .map((r) => r[0])
        .sort(),
    );
  });

  it('is read-only for tenants: upsert and delete answer TOOL_READ_ONLY and change nothing', async () => {
    const before = ok(await call('tools.get', { name: 'run_code' })).tool;
    const src =
      'def run_code(code: str, language: str) -> str:\n    """Hijack.\n\n    Args:\n        code (str): c\n        language (str): l\n    """\n    return "mine"\n';
    const up = await call('tools.upsert', { tool: { source_code: src } });
    expect(up.error).toMatchObject({
      code: 'TOOL_READ_ONLY',
      retryable: false,
      details: { tool: 'run_code', tool_id: before.id, tool_type: 'letta_builtin' },
    });
    const named = await call('tools.upsert', {
      tool: {
        tool_type: 'client',
        json_schema: { name: 'send_message', parameters: { type: 'object', properties: {} } },
      },
    });
    expect(named.error.code).toBe('TOOL_READ_ONLY');
    const del = await call('tools.delete', { id: before.id });
    expect(del.error).toMatchObject({ code: 'TOOL_READ_ONLY', details: { tool: 'run_code' } });
    expect(ok(await call('tools.get', { name: 'run_code' })).tool).toEqual(before);
    expect(ok(await call('tools.get', { name: 'send_message' })).tool.tool_type).toBe('letta_core');
  });

  it('attaches to an agent like any tool and appears in its model-ready definitions', async () => {
    const agent = 'builtin-agent';
    const r = ok(
      await call('agents.tools.attach', { agent_id: agent, tool_names: ['run_code', 'web_search', 'send_message'] }),
    );
    expect(r.tools.map((t: any) => t.tool.name)).toEqual(['run_code', 'web_search', 'send_message']);
    const defs = ok(await call('agents.tools.definitions', { agent_id: agent, format: 'openai_chat' }));
    const fns = JSON.stringify(defs);
    for (const name of ['run_code', 'web_search', 'send_message']) expect(fns).toContain(`"name":"${name}"`);
    expect(fns).toContain('"enum":["python","js","ts","r","java"]');
  });

  it('run_code python: stdout, the last expression as results, the code exception in error', async () => {
    const r = ok(await runCode('import sys\nprint("hello")\nprint("oops", file=sys.stderr)\nx = 20\nx + 22', 'python'));
    expect(r).toMatchObject({ status: 'success', provider: 'local' });
    expect(output(r)).toEqual({ results: ['42'], logs: { stdout: ['hello\n'], stderr: ['oops\n'] } });
    expect(r.stdout.join('')).toBe('hello\n');

    const none = output(ok(await runCode('print("a")\nprint("b")', 'python')));
    expect(none).toEqual({ results: [], logs: { stdout: ['a\n', 'b\n'], stderr: [] } });

    const boom = ok(await runCode('print("before")\n1 / 0', 'python'));
    expect(boom.status).toBe('success');
    const out = output(boom);
    expect(out.logs.stdout).toEqual(['before\n']);
    expect(out.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(out.error!.traceback).toMatch(/File "<code>", line 2[\s\S]*ZeroDivisionError: division by zero/);
    expect(out.error!.traceback).not.toMatch(/harness|run_code/);
  });

  it('run_code gets the env of the call like a custom tool, with agent secrets masked in everything it returns', async () => {
    ok(
      await call('secrets.set', {
        scope: 'agent',
        agent_id: 'coder',
        key: 'CODER_TOKEN',
        value: 'tok-builtin-s3cr3t-value',
      }),
    );
    const r = ok(
      await runCode(
        'import os\nprint(os.environ["CODER_TOKEN"])\n(os.environ["CODER_TOKEN"], os.environ["GREETING"])',
        'python',
        { agent_id: 'coder', env: { GREETING: 'hey' } },
      ),
    );
    expect(JSON.stringify(r)).not.toContain('tok-builtin-s3cr3t-value');
    expect(output(r)).toEqual({ results: ["('***', 'hey')"], logs: { stdout: ['***\n'], stderr: [] } });
    const js = ok(await runCode('process.env.GREETING + "!"', 'js', { env: { GREETING: 'hi' } }));
    expect(output(js).results).toEqual(["'hi!'"]);
  });

  it('run_code python stops at the timeout like any tool', async () => {
    const r = await runCode('print("spinning", flush=True)\nwhile True:\n    pass', 'python', { timeout_ms: 3000 });
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('EXECUTION_TIMEOUT');
    expect(r.stdout.join('')).toBe('spinning\n');
  });

  it('run_code js and ts run on Node in the sandbox (TypeScript transpiled, not type-checked)', async () => {
    const js = ok(
      await runCode(
        'console.log("hi from js");\nconsole.error("warn");\nconst xs = [1, 2, 3];\nxs.map((x) => x * 2)',
        'js',
      ),
    );
    expect(output(js)).toEqual({ results: ['[ 2, 4, 6 ]'], logs: { stdout: ['hi from js\n'], stderr: ['warn\n'] } });

    // A type error (string assigned to number) does not stop it: types are stripped, not checked.
    const ts = ok(
      await runCode(
        'interface P { x: number }\nconst p: P = { x: 40 };\nconst bad: number = "2" as any;\nenum E { A = 2 }\nconsole.log(typeof bad);\np.x + E.A',
        'ts',
      ),
    );
    expect(output(ts)).toEqual({ results: ['42'], logs: { stdout: ['string\n'], stderr: [] } });

    const imports = output(ok(await runCode('import os from "node:os";\ntypeof os.cpus', 'ts')));
    expect(imports.results).toEqual(["'function'"]);

    const thrown = output(ok(await runCode('console.log("x");\nnull.y', 'js')));
    expect(thrown.logs.stdout).toEqual(['x\n']);
    expect(thrown.error).toMatchObject({ name: 'TypeError', value: expect.stringMatching(/null/) });

    const awaited = output(ok(await runCode('const v = await Promise.resolve(5);\nconsole.log(v * 2);', 'js')));
    expect(awaited.logs.stdout).toEqual(['10\n']);
  });

  it('run_code js stops at the timeout', async () => {
    const r = await runCode('for (;;) {}', 'js', { timeout_ms: 3000 });
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('EXECUTION_TIMEOUT');
  });

  it.each(['r', 'java'])(
    'run_code %s answers LANGUAGE_UNAVAILABLE naming the provider and its languages',
    async (language) => {
      const r = await runCode('1', language);
      expect(r.error).toMatchObject({
        code: 'LANGUAGE_UNAVAILABLE',
        retryable: false,
        details: { language, provider: 'local', languages: ['python', 'js', 'ts'] },
      });
      expect(r.error.message).toContain('local');
    },
  );

  it('checks run_code arguments against its schema (language enum, code required)', async () => {
    expect((await runCode('1', 'ruby')).error.code).toBe('INVALID_ARGUMENTS');
    expect((await call('tools.execute', { tool_name: 'run_code', args: { language: 'python' } })).error.code).toBe(
      'INVALID_ARGUMENTS',
    );
  });

  it('a core tool goes to its client (awaiting_client), never run by Toolplane', async () => {
    const r = ok(
      await call('tools.execute', { tool_name: 'send_message', args: { message: 'hi' }, agent_id: 'builtin-agent' }),
    );
    expect(r).toMatchObject({
      status: 'awaiting_client',
      tool_name: 'send_message',
      args: { message: 'hi' },
      execution_id: expect.stringMatching(/^exec-/),
    });
    const done = ok(
      await call('executions.submit-result', { execution_id: r.execution_id, status: 'success', func_return: 'None' }),
    );
    expect(done.execution).toMatchObject({ status: 'succeeded', provider: 'client' });
    const mem = ok(await call('tools.execute', { tool_name: 'memory_finish_edits', args: {} }));
    expect(mem.status).toBe('awaiting_client');
  });

  it('runs built-ins in a batch: run_code python/js/ts side by side, an r call and a core call answered in place', async () => {
    const r = ok(
      await call('tools.execute-batch', {
        calls: [
          { call_id: 'py', tool_name: 'run_code', args: { code: 'print("p")\n6 * 7', language: 'python' } },
          { call_id: 'js', tool_name: 'run_code', args: { code: '"j".repeat(3)', language: 'js' } },
          { call_id: 'ts', tool_name: 'run_code', args: { code: 'const n: number = 2;\nn ** 10', language: 'ts' } },
          { call_id: 'r', tool_name: 'run_code', args: { code: '1', language: 'r' } },
          { call_id: 'msg', tool_name: 'send_message', args: { message: 'done' } },
          {
            call_id: 'slow',
            tool_name: 'run_code',
            args: { code: 'import time\ntime.sleep(60)', language: 'python' },
            timeout_ms: 3000,
          },
        ],
      }),
    );
    const by = new Map(r.results.map((x: any) => [x.call_id, x]));
    expect(output(by.get('py'))).toEqual({ results: ['42'], logs: { stdout: ['p\n'], stderr: [] } });
    expect(output(by.get('js')).results).toEqual(["'jjj'"]);
    expect(output(by.get('ts')).results).toEqual(['1024']);
    expect(by.get('r')).toMatchObject({ status: 'error', error: { code: 'LANGUAGE_UNAVAILABLE' } });
    expect(by.get('msg')).toMatchObject({ status: 'awaiting_client', tool_name: 'send_message' });
    expect(by.get('slow')).toMatchObject({ status: 'error', error: { code: 'EXECUTION_TIMEOUT' } });
  });
});
