/**
 * Generated requests for every public subject (fast-check, fixed seeds): valid payloads mutated
 * field by field, arbitrary JSON, wrong types, deep nesting, huge strings, NUL, lone surrogates
 * and other Unicode edge cases, and mutated tool sources for the schema engine.
 */
import fc from 'fast-check';
import { ErrorCode, REQUESTS, requestDescriptorFor } from '@toolplane/contracts';

/** Strings that broke (or could break) something somewhere. */
export const EDGE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\ud83d\ude00',
  '\u202eevil',
  '\ufeffbom',
  '\u0085\u2028\u2029',
  'e\u0301\u0301\u0301',
  '../../../etc/passwd',
  '{{SECRET}}',
  '{{ SECRET | default }}',
  '%s%n%x',
  "'; DROP TABLE tools; --",
  '<script>alert(1)</script>',
  'tool-00000000-0000-0000-0000-000000000000',
  'toolplane.internal.v1.runners.local.run',
  '__proto__',
  'constructor',
  'a'.repeat(300),
  'é'.repeat(5000),
  'x'.repeat(70_000),
];

const edgeString = fc.constantFrom(...EDGE_STRINGS);
const anyString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: edgeString },
  { weight: 1, arbitrary: fc.string({ maxLength: 2000 }) },
);

/** JSON-ish values of every type, edge strings included, nested up to `depth` (and sometimes far deeper). */
export function jsonish(depth = 4): fc.Arbitrary<unknown> {
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', maxDepth: depth },
      anyString,
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.constantFrom(2 ** 53, -0, 1e308, Number.MAX_SAFE_INTEGER + 2),
      fc.array(tie('value'), { maxLength: 5 }),
      fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), edgeString), tie('value'), { maxKeys: 5 }),
    ),
  }));
  return fc.oneof(
    { weight: 20, arbitrary: value },
    { weight: 1, arbitrary: fc.integer({ min: 60, max: 1500 }).map(nest) },
  );
}

function nest(levels: number): unknown {
  let v: unknown = 'deep';
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { d: v };
  return v;
}

/** A valid payload with one change: a field dropped, replaced by anything, or given an edge value; or extra fields. */
export function mutated(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const paths = leafPaths(valid);
  return fc.oneof(
    fc.constant(valid),
    fc.tuple(fc.constantFrom(...paths), jsonish()).map(([p, v]) => setAt(valid, p, v)),
    fc.tuple(fc.constantFrom(...paths), edgeString).map(([p, v]) => setAt(valid, p, v)),
    fc.constantFrom(...paths).map((p) => setAt(valid, p, undefined)),
    fc.tuple(fc.string({ maxLength: 10 }), jsonish(2)).map(([k, v]) => ({ ...valid, [k]: v })),
  );
}

/** Whole requests: mostly mutations of the valid payload, some arbitrary JSON, some raw bytes. */
export function requestsFor(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 12, arbitrary: mutated(valid) },
    { weight: 2, arbitrary: jsonish() },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('{"org_id":', '[]', 'null', '"\\ud800"', '{"a":1}{"b":2}', '\u0000')
        .map((raw) => ({ __raw: raw })),
    },
  );
}

/** Python and TypeScript tool sources, broken in the ways a hostile or careless tenant would. */
export function mutatedSource(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.tuple(fc.nat(valid.length), anyString).map(([at, s]) => valid.slice(0, at) + s + valid.slice(at)),
    fc.tuple(fc.nat(valid.length), fc.nat(200)).map(([at, n]) => valid.slice(0, at) + valid.slice(at + n)),
    fc
      .integer({ min: 1, max: 40 })
      .map((n) => valid.replace('Args:', `Args:\n${'        a (int): x\n'.repeat(n * 50)}`)),
    fc.constantFrom(
      valid.replace('The first number.', `x${' '.repeat(20_000)}: y`),
      valid.replace('The first number.', 'a ('.repeat(5_000)),
      valid.replace('"""', `"""${'\\'.repeat(3000)}`),
      `${valid}\n${'def f():\n    pass\n'.repeat(500)}`,
      valid.replace('int', 'Dict[str, List[Optional[Union[int, str]]]]'.repeat(20)),
    ),
  );
}

function leafPaths(v: Record<string, unknown>, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  for (const [k, x] of Object.entries(v)) {
    out.push([...prefix, k]);
    if (x && typeof x === 'object' && !Array.isArray(x))
      out.push(...leafPaths(x as Record<string, unknown>, [...prefix, k]));
  }
  return out.length ? out : [['org_id']];
}

function setAt(v: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...v };
  if (path.length === 1) {
    if (value === undefined) delete copy[path[0]!];
    else copy[path[0]!] = value;
    return copy;
  }
  copy[path[0]!] = setAt((v[path[0]!] as Record<string, unknown>) ?? {}, path.slice(1), value);
  return copy;
}

/** Every public subject must have a valid example here (a test checks it). */
export function validPayloads(
  org: string,
  ids: { tool: string; server: string; token: string },
): Record<string, Record<string, unknown>> {
  const add =
    'def add(a: int, b: int = 2) -> int:\n    """Add two integers.\n\n    Args:\n        a (int): The first number.\n        b (int): The second number.\n    """\n    return a + b\n';
  const schema = {
    name: 'f',
    description: 'F.',
    parameters: { type: 'object', properties: { a: { type: 'string', description: 'A.' } }, required: ['a'] },
  };
  return {
    'toolplane.v1.tools.upsert': { org_id: org, tool: { source_code: add, tags: ['fuzz'], metadata_: { k: 'v' } } },
    'toolplane.v1.tools.get': { org_id: org, name: 'add' },
    'toolplane.v1.tools.list': { org_id: org, tags: ['fuzz'], limit: 5 },
    'toolplane.v1.tools.delete': { org_id: org, id: ids.tool },
    'toolplane.v1.agents.tools.attach': {
      org_id: org,
      agent_id: 'fuzz-agent',
      tool_names: ['add'],
      requires_approval: true,
    },
    'toolplane.v1.agents.tools.detach': { org_id: org, agent_id: 'fuzz-agent', tool_names: ['add'] },
    'toolplane.v1.agents.tools.list': { org_id: org, agent_id: 'fuzz-agent', limit: 5 },
    'toolplane.v1.agents.tools.definitions': {
      org_id: org,
      agent_id: 'fuzz-agent',
      format: 'openai_chat',
      strict: true,
    },
    'toolplane.v1.toolsets.upsert': {
      org_id: org,
      toolset: {
        name: 'fuzz-set',
        description: 'd',
        instructions: 'i',
        tool_names: ['add'],
        tags: ['fuzz'],
        requires_approval: true,
      },
    },
    'toolplane.v1.toolsets.get': { org_id: org, name: 'fuzz-set' },
    'toolplane.v1.toolsets.list': { org_id: org, limit: 5 },
    'toolplane.v1.toolsets.delete': { org_id: org, name: 'fuzz-set' },
    'toolplane.v1.toolsets.tools.list': { org_id: org, name: 'fuzz-set', limit: 5 },
    'toolplane.v1.schemas.generate': { source_code: add, source_type: 'python' },
    'toolplane.v1.schemas.validate': { json_schema: schema },
    'toolplane.v1.schemas.strictify': { json_schema: schema },
    'toolplane.v1.schemas.normalize': { json_schema: schema.parameters },
    'toolplane.v1.tools.execute': {
      org_id: org,
      tool_name: 'add',
      args: { a: 1, b: 2 },
      timeout_ms: 5000,
      user_id: 'fuzz-user',
    },
    'toolplane.v1.tools.execute-batch': {
      org_id: org,
      user_id: 'fuzz-user',
      calls: [
        { call_id: 'c1', tool_name: 'add', args: { a: 1, b: 2 } },
        { call_id: 'c2', tool_id: ids.tool, args: { a: 3 } },
      ],
      timeout_ms: 5000,
    },
    'toolplane.v1.tools.environment': { org_id: org, tool_name: 'add', prepare: true },
    'toolplane.v1.executions.get': { org_id: org, execution_id: 'exec-00000000-0000-4000-8000-000000000000' },
    'toolplane.v1.executions.list': {
      org_id: org,
      agent_id: 'fuzz-agent',
      user_id: 'fuzz-user',
      status: 'succeeded',
      limit: 5,
    },
    'toolplane.v1.executions.approve': {
      org_id: org,
      execution_id: 'exec-00000000-0000-4000-8000-000000000000',
      args: { a: 1 },
    },
    'toolplane.v1.executions.deny': {
      org_id: org,
      execution_id: 'exec-00000000-0000-4000-8000-000000000000',
      reason: 'no',
    },
    'toolplane.v1.executions.submit-result': {
      org_id: org,
      execution_id: 'exec-00000000-0000-4000-8000-000000000000',
      status: 'success',
      func_return: { ok: true },
      stdout: ['x'],
    },
    'toolplane.v1.secrets.set': {
      org_id: org,
      scope: 'user',
      user_id: 'fuzz-user',
      key: 'FUZZ_KEY',
      value: 'fuzz-value',
      description: 'd',
    },
    'toolplane.v1.secrets.list': { org_id: org, scope: 'user', user_id: 'fuzz-user' },
    'toolplane.v1.secrets.delete': { org_id: org, scope: 'user', user_id: 'fuzz-user', key: 'FUZZ_KEY' },
    'toolplane.v1.webhooks.set': {
      org_id: org,
      url: 'http://127.0.0.1:9/hook',
      signing_secret: 'whsec-0123456789abcdef',
      timeout_ms: 500,
    },
    'toolplane.v1.webhooks.get': { org_id: org },
    'toolplane.v1.webhooks.delete': { org_id: org },
    'toolplane.v1.sandbox-configs.upsert': {
      org_id: org,
      provider: 'local',
      config: { timeout_ms: 5000, memory_mb: 256 },
    },
    'toolplane.v1.sandbox-configs.get': { org_id: org, provider: 'local' },
    'toolplane.v1.sandbox-configs.list': { org_id: org },
    'toolplane.v1.mcp.servers.add': {
      org_id: org,
      server: { name: 'fuzz', transport: 'streamable_http', url: 'http://127.0.0.1:9/mcp' },
    },
    'toolplane.v1.mcp.servers.get': { org_id: org, name: 'fuzz' },
    'toolplane.v1.mcp.servers.list': { org_id: org },
    'toolplane.v1.mcp.servers.update': { org_id: org, name: 'fuzz', server: { url: 'http://127.0.0.1:9/mcp2' } },
    'toolplane.v1.mcp.servers.remove': { org_id: org, id: ids.server },
    'toolplane.v1.mcp.servers.sync': { org_id: org, name: 'fuzz' },
    'toolplane.v1.mcp.oauth.complete': { org_id: org, state: 'x'.repeat(43), code: 'code', user_id: 'fuzz-user' },
    'toolplane.v1.connections.list': { org_id: org, user_id: 'fuzz-user', server: 'fuzz' },
    'toolplane.v1.connections.get': { org_id: org, user_id: 'fuzz-user', server: 'fuzz' },
    'toolplane.v1.connections.revoke': { org_id: org, user_id: 'fuzz-user', server: 'fuzz' },
    'toolplane.v1.auth.tokens.create': {
      org_id: org,
      name: 'fuzz',
      ttl_s: 600,
      scopes: ['tools:read'],
      user_id: 'fuzz-user',
    },
    'toolplane.v1.auth.tokens.list': { org_id: org, limit: 5 },
    'toolplane.v1.auth.tokens.revoke': { org_id: org, token_id: ids.token },
    'toolplane.v1.auth.orgs.delete': { org_id: `${org}-victim` },
  };
}

export const PUBLIC_REQUEST_SUBJECTS = REQUESTS.filter((d) => d.visibility === 'public').map((d) => d.subject);

const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

/**
 * What came back for a generated request on `subject` (`ok` for a result, else the error code) and
 * what is wrong with it, if anything: INTERNAL, an unknown code, or a result its contract refuses.
 */
export function judgeReply(subject: string, reply: unknown): { code: string; problem?: string } {
  const error = (reply as { error?: { code?: unknown } } | null)?.error;
  if (error) {
    const code = String(error.code);
    if (code === ErrorCode.INTERNAL) return { code, problem: 'INTERNAL' };
    return KNOWN_CODES.has(code) ? { code } : { code, problem: `unknown error code ${code}` };
  }
  const ok = requestDescriptorFor(subject)?.reply.safeParse(reply);
  return ok?.success
    ? { code: 'ok' }
    : {
        code: 'ok',
        problem: `reply does not match its contract: ${ok?.error.message.slice(0, 300) ?? 'no descriptor'}`,
      };
}
