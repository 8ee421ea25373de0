/**
 * MCP 2025-11-25 tasks through the gateway, with the SDK's own client: a task-augmented tools/call
 * is an async Toolplane execution (taskId = execution_id), so tasks/get and tasks/result read its
 * record; a call that needs approval is input_required until an approver acts over NATS, and a
 * client's tasks/cancel of it denies it. Another org's task id is not found.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { RawClient } from '../support/nats-client';
import { ADD, pythonTool } from '../support/tools';

describe('MCP gateway: calls as tasks', () => {
  let nats: RawClient;
  let client: Client;
  const org = uniqueOrg('gw-task');
  const agent = 'agent-tasks';
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const startTask = (name: string, args: Record<string, unknown>) =>
    client.request(
      { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    ok(await nats.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }));
    ok(
      await nats.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: {
          source_code: pythonTool('transfer', 'return f"sent {amount}"', 'amount: int'),
          default_requires_approval: true,
        },
      }),
    );
    ok(
      await nats.req('toolplane.v1.agents.tools.attach', {
        org_id: org,
        agent_id: agent,
        tool_names: ['add', 'transfer'],
      }),
    );
    ({ client } = await mcpClient(agentEndpoint(agent), await nats.tokenFor(org)));
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await nats.close();
  });

  it('declares tasks and marks every tool as task-capable', async () => {
    expect(client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    expect(tools.every((t) => t.execution?.taskSupport === 'optional')).toBe(true);
  });

  it('runs a call as a task: its id is the execution’s, tasks/result gives the result once done', async () => {
    const { task } = await startTask('add', { a: 20, b: 22 });
    expect(task.taskId).toMatch(/^exec-/);
    expect(['working', 'completed']).toContain(task.status);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: '42' }]);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    const record = ok(await nats.req('toolplane.v1.executions.get', { org_id: org, execution_id: task.taskId }));
    expect(record.execution).toMatchObject({ mode: 'async', status: 'succeeded', agent_id: agent });
  });

  it('a call that needs approval is input_required until an approver runs it', async () => {
    const { task } = await startTask('transfer', { amount: 7 });
    expect(task.status).toBe('input_required');
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('input_required');
    ok(await nats.req('toolplane.v1.executions.approve', { org_id: org, execution_id: task.taskId }));
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'sent 7' }]);
  });

  it('tasks/cancel of a task waiting for approval denies it; a finished task cannot be cancelled', async () => {
    const { task } = await startTask('transfer', { amount: 1 });
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    const record = ok(await nats.req('toolplane.v1.executions.get', { org_id: org, execution_id: task.taskId }));
    expect(record.execution.status).toBe('denied');
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/terminal/);
  });

  it('lists the endpoint’s tasks, and another org cannot see one', async () => {
    const { task } = await startTask('add', { a: 1, b: 1 });
    await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const listed = await expectEventually(async () => {
      const { tasks } = await client.experimental.tasks.listTasks();
      return tasks.some((t) => t.taskId === task.taskId) && tasks;
    });
    expect(listed.every((t) => t.taskId.startsWith('exec-'))).toBe(true);
    const other = await mcpClient(agentEndpoint(agent), await nats.tokenFor(uniqueOrg('gw-task-b')));
    try {
      await expect(other.client.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
    } finally {
      await other.client.close();
    }
  });
});
