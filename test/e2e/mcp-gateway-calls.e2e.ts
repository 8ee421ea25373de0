/**
 * What an MCP client's call does down the stack, through the gateway: its progress token brings
 * an MCP upstream's progress back (mcp-sync → executor → gateway → notifications/progress), and
 * its cancellation (notifications/cancelled, the SDK's AbortSignal) stops the sandbox and records
 * the execution failed with REQUEST_CANCELLED.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expectEventually } from '@toolplane/testing';
import { testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { startEverythingHttp } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { hostProcessesWith, waitNoProcessWith } from '../support/processes';
import { pythonTool } from '../support/tools';

describe('MCP gateway: progress and cancellation of a call', () => {
  let nats: RawClient;
  let client: Client;
  const stops: Array<() => Promise<void>> = [];
  const org = uniqueOrg('gw-calls');
  const agent = 'agent-calls';
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    const everything = await startEverythingHttp('streamableHttp');
    stops.push(everything.stop);
    ok(
      await nats.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'everything', transport: 'streamable_http', url: everything.url } },
        { timeoutMs: 30_000 },
      ),
    );
    ok(
      await nats.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: {
          source_code: pythonTool(
            'nap',
            'import subprocess, time\nsubprocess.Popen(["/bin/sleep", marker])\ntime.sleep(300)\nreturn "late"',
            'marker: str',
          ),
        },
      }),
    );
    ok(
      await nats.req('toolplane.v1.agents.tools.attach', {
        org_id: org,
        agent_id: agent,
        tool_names: ['nap', 'trigger-long-running-operation'],
      }),
    );
    ({ client } = await mcpClient(agentEndpoint(agent), await nats.tokenFor(org)));
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await Promise.all(stops.map((s) => s()));
    await nats.close();
  });

  it('relays an MCP upstream’s progress to the client, in order, before the result', async () => {
    const seen: Array<{ progress: number; total?: number }> = [];
    const r = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
      undefined,
      {
        onprogress: (p) => seen.push({ progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}) }),
      },
    );
    expect(r.isError).toBeFalsy();
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3, 4]);
    expect(seen.every((p) => p.total === 4)).toBe(true);
  });

  it('a cancelled call stops its sandbox and its execution is recorded failed with REQUEST_CANCELLED', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.25`;
    const ctrl = new AbortController();
    const call = client
      .callTool({ name: 'nap', arguments: { marker } }, undefined, { signal: ctrl.signal, timeout: 120_000 })
      .then(
        () => 'answered',
        (e: Error) => e.message,
      );
    await expectEventually(() => expect(hostProcessesWith(marker).length).toBeGreaterThan(0), {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    ctrl.abort('the user pressed stop');
    expect(await call).toMatch(/stop|abort/i);
    // notifications/cancelled → the gateway's handler signal → executor → runner-local: the sandbox is gone.
    expect(await waitNoProcessWith(marker, 30_000)).toEqual([]);
    const rec = await expectEventually(
      async () => {
        const list = ok(await nats.req('toolplane.v1.executions.list', { org_id: org, agent_id: agent }));
        const naps = list.executions.filter((e: any) => e.tool_name === 'nap');
        return naps.length === 1 && naps[0].status !== 'running' && naps[0];
      },
      { timeoutMs: 30_000 },
    );
    expect(rec).toMatchObject({ status: 'failed', error_code: 'REQUEST_CANCELLED' });
  });
});
