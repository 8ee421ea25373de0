/**
 * Client-side tools (`tool_type: "client"`): registered with a schema and no source, never run by
 * Toolplane; tools.execute answers awaiting_client and the runtime reports the outcome once.
 */
import { testPrefix, uniqueOrg } from '../support/context';
import { eventsFor, recordOf } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { ADD } from '../support/tools';

const PICK_FILE = {
  name: 'pick_file',
  description: 'Ask the user to pick a file on their machine.',
  parameters: {
    type: 'object',
    properties: { pattern: { type: 'string', description: 'A glob.' } },
    required: ['pattern'],
  },
};

describe('client-side tools', () => {
  let client: RawClient;
  const org = uniqueOrg('client');
  let toolId: string;
  const exec = (body: Record<string, unknown>) =>
    client.req('toolplane.v1.tools.execute', { org_id: org, ...body }, { timeoutMs: 30_000 });
  const submit = (body: Record<string, unknown>, asOrg = org) =>
    client.req('toolplane.v1.executions.submit-result', { org_id: asOrg, ...body }, { timeoutMs: 30_000 });

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    const up = await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { tool_type: 'client', json_schema: PICK_FILE } },
      30_000,
    );
    toolId = up.tool.id;
    expect(up.tool).toMatchObject({
      tool_type: 'client',
      name: 'pick_file',
      source_code: null,
      source_type: null,
      json_schema: PICK_FILE,
      description: PICK_FILE.description,
    });
    await client.call('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, 30_000);
  });
  afterAll(async () => {
    await client?.close();
  });

  it('registers a client tool only with a schema and without source (a custom tool needs its source)', async () => {
    const noSchema = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { tool_type: 'client', name: 'x' },
    });
    expect(noSchema.error.code).toBe('CONTRACT_VIOLATION');
    const withSource = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { tool_type: 'client', json_schema: PICK_FILE, source_code: ADD },
    });
    expect(withSource.error.code).toBe('CONTRACT_VIOLATION');
    const customNoSource = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { json_schema: PICK_FILE },
    });
    expect(customNoSource.error.code).toBe('CONTRACT_VIOLATION');
    const listed = await client.call('toolplane.v1.tools.list', { org_id: org, tool_types: ['client'] }, 15_000);
    expect(listed.tools.map((t: { id: string }) => t.id)).toEqual([toolId]);
  });

  it('never runs it: answers awaiting_client, then completes once with what the runtime reports', async () => {
    const r = await exec({ tool_name: 'pick_file', args: { pattern: '*.pdf' }, agent_id: 'desk' });
    expect(r).toEqual({
      status: 'awaiting_client',
      execution_id: expect.stringMatching(/^exec-/),
      tool_id: toolId,
      tool_name: 'pick_file',
      args: { pattern: '*.pdf' },
    });
    const waiting = await recordOf(client, org, r.execution_id);
    expect(waiting.execution).toMatchObject({ status: 'awaiting_client', agent_id: 'desk', provider: null });
    expect(waiting.args).toEqual({ pattern: '*.pdf' });
    expect(waiting.result).toBeNull();

    const done = await submit({
      execution_id: r.execution_id,
      status: 'success',
      func_return: { path: '/home/u/a.pdf' },
      stdout: ['picked'],
    });
    expect(done.execution).toMatchObject({ status: 'succeeded', provider: 'client', error_code: null });
    expect(done.result).toMatchObject({
      execution_id: r.execution_id,
      status: 'success',
      func_return: { path: '/home/u/a.pdf' },
      stdout: ['picked'],
      stderr: [],
      provider: 'client',
    });
    const got = await recordOf(client, org, r.execution_id);
    expect(got.result).toEqual(done.result);
    expect(got.args).toBeNull();

    const twice = await submit({ execution_id: r.execution_id, status: 'success', func_return: 'again' });
    expect(twice.error).toMatchObject({ code: 'EXECUTION_ALREADY_COMPLETED', details: { status: 'succeeded' } });
    expect((await recordOf(client, org, r.execution_id)).result.func_return).toEqual({ path: '/home/u/a.pdf' });
    const events = await eventsFor(client, testPrefix(), [r.execution_id], ['completed']);
    expect(events.map((e) => e.kind)).toEqual(['completed']);
  });

  it('records a failure the runtime reports as failed (TOOL_EXCEPTION)', async () => {
    const r = await exec({ tool_name: 'pick_file', args: { pattern: '*' } });
    const done = await submit({
      execution_id: r.execution_id,
      status: 'error',
      func_return: 'the user closed the dialog',
    });
    expect(done.execution).toMatchObject({ status: 'failed', error_code: 'TOOL_EXCEPTION' });
    expect(done.result.error).toEqual({ code: 'TOOL_EXCEPTION', message: 'the user closed the dialog' });
  });

  it('checks the arguments against the schema before anything is recorded', async () => {
    const r = await exec({ tool_name: 'pick_file', args: { pattern: 3 } });
    expect(r.error.code).toBe('INVALID_ARGUMENTS');
  });

  it("refuses a result for another org's execution, and for an execution that is not the client's", async () => {
    const r = await exec({ tool_name: 'pick_file', args: { pattern: '*.txt' } });
    const other = uniqueOrg('intruder');
    const foreign = await submit({ execution_id: r.execution_id, status: 'success', func_return: 'forged' }, other);
    expect(foreign.error.code).toBe('EXECUTION_NOT_FOUND');
    expect((await recordOf(client, org, r.execution_id)).execution.status).toBe('awaiting_client');

    const ran = await exec({ tool_name: 'add', args: { a: 1 } });
    await recordOf(client, org, ran.execution_id);
    const notClient = await submit({ execution_id: ran.execution_id, status: 'success', func_return: 99 });
    expect(notClient.error).toMatchObject({ code: 'EXECUTION_ALREADY_COMPLETED', details: { status: 'succeeded' } });
    expect(
      (await submit({ execution_id: 'exec-00000000-0000-4000-8000-000000000000', status: 'success', func_return: 1 }))
        .error.code,
    ).toBe('EXECUTION_NOT_FOUND');
  });

  it('cuts a reported return to the tool’s return_char_limit', async () => {
    const up = await client.call(
      'toolplane.v1.tools.upsert',
      {
        org_id: org,
        tool: { tool_type: 'client', json_schema: { ...PICK_FILE, name: 'short_pick' }, return_char_limit: 10 },
      },
      30_000,
    );
    expect(up.tool.return_char_limit).toBe(10);
    const r = await exec({ tool_name: 'short_pick', args: { pattern: '*' } });
    const done = await submit({ execution_id: r.execution_id, status: 'success', func_return: 'x'.repeat(50) });
    expect(done.result.func_return).toMatch(/^x{10}\.\.\. \[NOTE: function output was truncated/);
  });
});
