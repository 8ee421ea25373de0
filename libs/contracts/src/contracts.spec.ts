import Ajv2020 from 'ajv/dist/2020';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENTS, REQUESTS } from './catalog';
import { defineEvent, defineRequest } from './descriptor';
import { ErrorCode, ToolplaneError, isRetryable } from './errors';
import { findWireIssue } from './common';
import { ToolsExecute, ToolsExecuteBatch } from './execute.contract';
import { ExecutionCompleted, ExecutionRecord, ExecutionsList } from './executions.contract';
import { publicJsonSchemas } from './json-schemas';
import { Tool } from './tool';
import { ToolsGet, ToolsUpsert } from './tools.contract';
import { z } from 'zod';

const ROOT = join(__dirname, '..', '..', '..');
const seedToolSchema = JSON.parse(readFileSync(join(ROOT, 'libs', 'contracts', 'seed', 'tool.schema.json'), 'utf8'));

const sampleTool = {
  id: 'tool-123e4567-e89b-12d3-a456-426614174000',
  tool_type: 'custom',
  description: 'Add.',
  source_type: 'python',
  name: 'add',
  tags: ['math'],
  source_code: 'def add(a: int) -> int: ...',
  json_schema: { name: 'add' },
  args_json_schema: null,
  return_char_limit: 50000,
  pip_requirements: [{ name: 'requests', version: '2.32.0' }],
  npm_requirements: null,
  default_requires_approval: null,
  enable_parallel_execution: false,
  created_by_id: null,
  last_updated_by_id: null,
  metadata_: null,
  project_id: null,
};

describe('contracts', () => {
  it('keeps docs/api in step with the contracts (run `npm run api:docs` after a change)', () => {
    const sut = publicJsonSchemas();
    const dir = join(ROOT, 'docs', 'api');
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
    expect(files).toEqual(Object.keys(sut).sort());
    for (const [file, schema] of Object.entries(sut)) {
      expect(JSON.parse(readFileSync(join(dir, file), 'utf8'))).toEqual(JSON.parse(JSON.stringify(schema)));
    }
  });

  it('has exactly the fields of the seed Tool schema, and accepts what it accepts', () => {
    const seedValidate = new Ajv2020({ strict: false }).compile(seedToolSchema);
    expect(Object.keys(Tool.shape).sort()).toEqual(Object.keys(seedToolSchema.properties).sort());
    expect(seedValidate(sampleTool)).toBe(true);
    expect(Tool.safeParse(sampleTool).success).toBe(true);
    expect(Tool.safeParse({ ...sampleTool, extra: 1 }).success).toBe(false);
    expect(seedValidate({ ...sampleTool, extra: 1 })).toBe(false);
  });

  it('gives every subject one descriptor and follows the subject grammar', () => {
    const subjects = [...REQUESTS.map((r) => r.subject), ...EVENTS.map((e) => e.subject)];
    expect(new Set(subjects).size).toBe(subjects.length);
    const base = { summary: '', request: z.object({}), reply: z.object({}), servedBy: 'registry' as const };
    expect(() => defineRequest({ ...base, subject: 'tools.get', visibility: 'public', scope: 'tools:read' })).toThrow();
    expect(() =>
      defineRequest({ ...base, subject: 'toolplane.internal.v1.x.y', visibility: 'public', scope: 'tools:read' }),
    ).toThrow();
    // Public subjects name a scope; internal ones name their callers.
    expect(() => defineRequest({ ...base, subject: 'toolplane.v1.x.y', visibility: 'public' })).toThrow(/scope/);
    expect(() =>
      defineRequest({ ...base, subject: 'toolplane.internal.v1.x.y', visibility: 'internal', callers: [] }),
    ).toThrow(/callers/);
    expect(() =>
      defineRequest({
        ...base,
        subject: 'toolplane.v1.x.y',
        visibility: 'public',
        scope: 'tools:read',
        callers: ['executor'],
      }),
    ).toThrow();
    expect(() =>
      defineEvent({
        subject: 'toolplane.v1.tool.created',
        summary: '',
        payload: z.object({}),
        publishedBy: ['registry'],
      }),
    ).toThrow();
  });

  it('requires org_id and exactly one tool reference where the API says so', () => {
    expect(ToolsUpsert.request.safeParse({ tool: { source_code: 'x' } }).success).toBe(false);
    expect(ToolsGet.request.safeParse({ org_id: 'a' }).success).toBe(false);
    expect(ToolsGet.request.safeParse({ org_id: 'a', name: 'x', id: sampleTool.id }).success).toBe(false);
    expect(ToolsExecute.request.safeParse({ org_id: 'a', tool_name: 'x' }).data?.args).toEqual({});
    expect(ToolsExecute.request.safeParse({ org_id: 'a', tool_name: 'x', env: { 'BAD-NAME': 'v' } }).success).toBe(
      false,
    );
  });

  it('takes an end user (user_id) on execute, execute-batch and executions.list: trimmed, 1-256 characters, no control characters', () => {
    const sut = (user_id: unknown) => ToolsExecute.request.safeParse({ org_id: 'a', tool_name: 'x', user_id });
    expect(sut('  auth0|user-1 ').data?.user_id).toBe('auth0|user-1');
    expect(sut('x'.repeat(256)).success).toBe(true);
    for (const bad of ['', '   ', 'x'.repeat(257), 'a\u0000b', 'a\nb', 'a\u007fb', 'a\u009bb', 42])
      expect([bad, sut(bad).success]).toEqual([bad, false]);
    expect(ToolsExecute.request.safeParse({ org_id: 'a', tool_name: 'x' }).data?.user_id).toBeUndefined();
    expect(
      ToolsExecuteBatch.request.safeParse({ org_id: 'a', user_id: ' u ', calls: [{ call_id: 'c', tool_name: 'x' }] })
        .data?.user_id,
    ).toBe('u');
    expect(ExecutionsList.request.safeParse({ org_id: 'a', user_id: 'u' }).data?.user_id).toBe('u');
    expect(ExecutionsList.request.safeParse({ org_id: 'a', user_id: 'a\tb' }).success).toBe(false);
  });

  it('takes a toolset name on execute (not with agent_id) and on executions.list; execute-batch has none', () => {
    const sut = (extra: Record<string, unknown>) =>
      ToolsExecute.request.safeParse({ org_id: 'a', tool_name: 'x', ...extra });
    expect(sut({ toolset: 'support-1' }).data?.toolset).toBe('support-1');
    expect(sut({ agent_id: 'agent-1' }).success).toBe(true);
    const both = sut({ toolset: 'support', agent_id: 'agent-1' });
    expect(both.success).toBe(false);
    expect(both.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['toolset', 'give at most one of agent_id or toolset'],
    ]);
    for (const bad of ['', 'Support', '-x', 'x'.repeat(65), 'a b'])
      expect([bad, sut({ toolset: bad }).success]).toEqual([bad, false]);
    expect(
      ToolsExecuteBatch.request.safeParse({
        org_id: 'a',
        toolset: 'support',
        calls: [{ call_id: 'c', tool_name: 'x' }],
      }).success,
    ).toBe(false);
    expect(ExecutionsList.request.safeParse({ org_id: 'a', toolset: 'support' }).data?.toolset).toBe('support');
  });

  it('reads a record or an execution event from before user_id as having none (null)', () => {
    const record = {
      execution_id: 'exec-123e4567-e89b-12d3-a456-426614174000',
      org_id: 'a',
      agent_id: null,
      tool_id: null,
      tool_name: 'x',
      provider: null,
      status: 'failed',
      mode: 'sync',
      created_at: '2026-11-25T10:00:00.000Z',
      started_at: null,
      finished_at: null,
      duration_ms: null,
      error_code: 'TOOL_NOT_FOUND',
      trace_id: '',
      idempotency_key: null,
      batch_id: null,
      call_id: null,
      expires_at: null,
    };
    expect(ExecutionRecord.parse(record).user_id).toBeNull();
    expect(ExecutionRecord.parse(record).toolset).toBeNull();
    const { execution_id, org_id, agent_id, tool_id, tool_name, status, mode, error_code, batch_id, call_id } = record;
    const event = {
      event_id: 'e',
      occurred_at: record.created_at,
      execution_id,
      org_id,
      agent_id,
      tool_id,
      tool_name,
      status,
      mode,
      error_code,
      batch_id,
      call_id,
    };
    expect(ExecutionCompleted.payload.parse(event).user_id).toBeNull();
    expect(ExecutionCompleted.payload.parse(event).toolset).toBeNull();
    expect(ExecutionCompleted.payload.parse({ ...event, user_id: 'u' }).user_id).toBe('u');
  });

  it('marks only transient failures retryable, and keeps codes from another service', () => {
    expect(isRetryable(ErrorCode.RUNNER_UNAVAILABLE)).toBe(true);
    expect(isRetryable(ErrorCode.INVALID_ARGUMENTS)).toBe(false);
    const remote = ToolplaneError.fromBody({ code: 'TOOL_NOT_FOUND', message: 'm', retryable: false, trace_id: 't' });
    expect(remote.code).toBe(ErrorCode.TOOL_NOT_FOUND);
    expect(ToolplaneError.fromBody({ code: 'WHAT', message: 'm', retryable: false, trace_id: 't' }).code).toBe(
      ErrorCode.INTERNAL,
    );
  });

  it('finds text Postgres cannot store anywhere in a request, names its path, and skips opaque fields', () => {
    expect(findWireIssue({ org_id: 'a', tool: { tags: ['ok', 'b\u0000ad'] } })).toEqual({
      path: 'tool.tags.1',
      message: expect.stringMatching(/NUL/),
    });
    expect(findWireIssue({ metadata_: { ['k\u0000']: 1 } })).toEqual({
      path: 'metadata_.k\u0000',
      message: expect.stringMatching(/^key .*NUL/),
    });
    expect(findWireIssue({ config: { template: 'x\ud800y' } })).toEqual({
      path: 'config.template',
      message: expect.stringMatching(/lone UTF-16 surrogate/),
    });
    expect(findWireIssue({ a: '\udc00' })?.path).toBe('a');
    // A well-formed pair (an emoji) and ordinary control characters are fine.
    expect(findWireIssue({ a: '\ud83d\ude00 tab\t newline\n', b: [1, true, null] })).toBeUndefined();
    expect(findWireIssue({ args: { text: 'nul\u0000 inside' }, tool_name: 'x' }, ToolsExecute.opaque)).toBeUndefined();
    expect(findWireIssue({ args: {}, tool_name: 'x\u0000' }, ToolsExecute.opaque)?.path).toBe('tool_name');
    // Nesting is bounded everywhere, opaque fields included, without recursion of its own.
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findWireIssue({ args: deep }, ToolsExecute.opaque)).toEqual({
      path: 'args'.concat('.0'.repeat(63)),
      message: 'nested deeper than 64 levels',
    });
    let ok: unknown = 'x';
    for (let i = 0; i < 63; i++) ok = { k: ok };
    expect(findWireIssue(ok)).toBeUndefined();
  });
});
