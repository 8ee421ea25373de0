/**
 * A tools.execute caller that is a service (as the MCP gateway is) cancels a call and follows its
 * progress through every hop: executor → runner-local (the sandbox is killed) and executor →
 * mcp-sync → an MCP server (its notifications/progress reach the caller).
 */
import { ToolsExecute, type RequestProgress } from '@toolplane/contracts';
import type { MessagingClient } from '@toolplane/messaging';
import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { serviceClient } from '../support/identity';
import { startEverythingHttp } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { hostProcessesWith, waitNoProcessWith } from '../support/processes';
import { startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

describe('cancel and progress of tools.execute across the services', () => {
  const prefix = `rx${Math.random().toString(36).slice(2, 8)}`;
  let stack: Stack;
  let client: RawClient;
  let caller: { messaging: MessagingClient; close(): Promise<void> };
  const stops: Array<() => Promise<void>> = [];
  const org = uniqueOrg('cancel');
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  /** The tool sleeps five minutes; a background `sleep <marker>` shows whether its sandbox was stopped. */
  const napper = async (name: string, marker: string) =>
    ok(
      await client.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: {
          source_code: pythonTool(
            name,
            `import subprocess, time\nsubprocess.Popen(["/bin/sleep", "${marker}"])\ntime.sleep(300)\nreturn "late"`,
          ),
        },
      }),
    );
  const records = async (toolName: string) =>
    ok(await client.req('toolplane.v1.executions.list', { org_id: org })).executions.filter(
      (e: any) => e.tool_name === toolName,
    );

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'mcp-sync'],
      env: { LOG_LEVEL: 'warn' },
    });
    client = await RawClient.connect(prefix);
    // A service's client (the gateway will be one): its requests sealed, its cancels believed.
    caller = await serviceClient('registry', prefix);
  });
  afterAll(async () => {
    await Promise.all(stops.map((s) => s()));
    await caller?.close();
    await client?.close();
    await stack?.stop();
  });

  it('a cancelled call stops its sandbox and is recorded failed with REQUEST_CANCELLED, run once', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.35`;
    await napper('long_nap', marker);
    const ctrl = new AbortController();
    const call = caller.messaging
      .request(
        ToolsExecute,
        { org_id: org, tool_name: 'long_nap', args: {}, timeout_ms: 300_000 },
        { timeoutMs: 120_000, signal: ctrl.signal },
      )
      .then(
        () => new Error('answered'),
        (e: unknown) => e,
      );
    await expectEventually(() => expect(hostProcessesWith(marker).length).toBeGreaterThan(0), {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    ctrl.abort();
    expect(await call).toMatchObject({ code: 'REQUEST_CANCELLED', retryable: false });
    // The cancel went executor → runner-local: the sandbox and everything it started are gone.
    expect(await waitNoProcessWith(marker, 30_000)).toEqual([]);
    const [rec] = await expectEventually(
      async () => {
        const found = await records('long_nap');
        expect(found.map((e: any) => e.status)).toEqual(['failed']);
        return found;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(rec).toMatchObject({ status: 'failed', error_code: 'REQUEST_CANCELLED' });
  });

  it('a retry of a cancelled call with its idempotency key answers the cancelled outcome: nothing runs again', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.45`;
    await napper('keyed_nap', marker);
    const body = { org_id: org, tool_name: 'keyed_nap', args: {}, timeout_ms: 300_000, idempotency_key: `k-${marker}` };
    const ctrl = new AbortController();
    const call = caller.messaging.request(ToolsExecute, body, { timeoutMs: 120_000, signal: ctrl.signal }).then(
      () => new Error('answered'),
      (e: unknown) => e,
    );
    await expectEventually(() => expect(hostProcessesWith(marker).length).toBeGreaterThan(0), {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    ctrl.abort();
    expect(await call).toMatchObject({ code: 'REQUEST_CANCELLED' });
    expect(await waitNoProcessWith(marker, 30_000)).toEqual([]);
    await expectEventually(
      async () => expect((await records('keyed_nap')).map((e: any) => e.status)).toEqual(['failed']),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // The same key again: the recorded outcome at once (a new run would sleep five minutes).
    const again = await caller.messaging.request(ToolsExecute, body, { timeoutMs: 30_000 });
    expect(again).toMatchObject({ status: 'error', error: { code: 'REQUEST_CANCELLED' } });
    expect((await records('keyed_nap')).map((e: any) => [e.status, e.error_code])).toEqual([
      ['failed', 'REQUEST_CANCELLED'],
    ]);
  });

  it("forwards an MCP server's progress notifications to the tools.execute caller, through executor and mcp-sync", async () => {
    const everything = await startEverythingHttp('streamableHttp');
    stops.push(everything.stop);
    ok(
      await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'everything', transport: 'streamable_http', url: everything.url } },
        { timeoutMs: 30_000 },
      ),
    );
    const progress: RequestProgress[] = [];
    const r = await caller.messaging.request(
      ToolsExecute,
      { org_id: org, tool_name: 'trigger-long-running-operation', args: { duration: 2, steps: 4 }, timeout_ms: 30_000 },
      { timeoutMs: 60_000, onProgress: (p) => progress.push(p) },
    );
    expect(r).toMatchObject({
      status: 'success',
      func_return: 'Long running operation completed. Duration: 2 seconds, Steps: 4.',
    });
    // One report per step (500 ms apart): coalescing may only drop one that comes right before the reply.
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(
      progress.every((p) => p.total === 4 && Number.isInteger(p.progress) && p.progress >= 1 && p.progress <= 4),
    ).toBe(true);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    expect(new Set(progress.map((p) => p.progress)).size).toBe(progress.length);
  });
});
