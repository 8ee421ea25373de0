import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { OtlpReceiver } from '../support/otlp-receiver';
import { startStack, type Stack } from '../support/stack';
import { ROLL_D20 } from '../support/tools';

describe('one execution is one trace across the services', () => {
  const receiver = new OtlpReceiver();
  let stack: Stack;
  let client: RawClient;
  const prefix = `${testPrefix()}tr`;
  const org = uniqueOrg('trace');

  beforeAll(async () => {
    await receiver.start();
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await receiver.stop();
  });

  it('continues the caller trace through executor, registry, credentials and runner-local, one span per step', async () => {
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ROLL_D20 } });
    expect(up.tool.name).toBe('roll_d20');

    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const h = client.headers();
    h.set('traceparent', `00-${traceId}-${callerSpan}-01`);
    const r = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'roll_d20', args: {} },
      { headers: h },
    );
    expect(r.status).toBe('success');
    expect(r.trace_id).toBe(traceId);

    const want = ['lookup tool', 'validate args', 'resolve env', 'dispatch', 'run sandbox', 'serialize result'];
    const ends = [
      'process toolplane.v1.tools.execute',
      'process toolplane.internal.v1.runners.local.run',
      'send toolplane.internal.v1.runners.local.run',
    ];
    const spans = await receiver.waitFor(
      traceId,
      (s) =>
        [...want, ...ends].every((n) => s.some((x) => x.name === n)) &&
        ['registry', 'credentials'].every((svc) => s.some((x) => x.service === svc)) &&
        linked(s, callerSpan),
    );
    const services = new Set(spans.map((s) => s.service));
    expect([...services].sort()).toEqual(['credentials', 'executor', 'registry', 'runner-local']);
    for (const n of want) expect(spans.map((s) => s.name)).toContain(n);

    // Parent links hold across processes: the executor's CONSUMER span hangs off the caller's span,
    // and the runner's CONSUMER span hangs off the executor's PRODUCER span.
    const root = spans.find((s) => s.name === 'process toolplane.v1.tools.execute')!;
    expect(root.parentSpanId).toBe(callerSpan);
    const runnerIn = spans.find((s) => s.name === 'process toolplane.internal.v1.runners.local.run')!;
    const executorOut = spans.find((s) => s.spanId === runnerIn.parentSpanId)!;
    expect(executorOut).toMatchObject({ service: 'executor', name: 'send toolplane.internal.v1.runners.local.run' });
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    for (const s of spans) if (s !== root) expect(byId.has(s.parentSpanId)).toBe(true);
  });

  it('traces the schema service when a tool is registered from source', async () => {
    const traceId = randomBytes(16).toString('hex');
    const h = client.headers();
    h.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    await client.req(
      'toolplane.v1.tools.upsert',
      { org_id: org, tool: { source_code: ROLL_D20.replace('roll_d20', 'roll_again') } },
      { headers: h },
    );
    // Wait for both spans: they are exported by different processes, in no fixed order.
    const published = 'publish toolplane.v1.events.tool.created';
    const spans = await receiver.waitFor(
      traceId,
      (s) => s.some((x) => x.service === 'schema') && s.some((x) => x.name === published),
    );
    expect(spans.find((s) => s.service === 'schema')?.name).toBe('process toolplane.v1.schemas.generate');
    expect(spans.find((s) => s.name === published)?.service).toBe('registry');
  });

  it('continues one MCP execution as one trace: executor → mcp-sync → the MCP server', async () => {
    const mcp = await new FakeMcpServer().start();
    try {
      mcp.tools = [echoTool('traced_echo')];
      const added = await client.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'traced', transport: 'streamable_http', url: mcp.url } },
        { timeoutMs: 30_000 },
      );
      expect(added.sync).toMatchObject({ added: 1 });
      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const h = client.headers();
      h.set('traceparent', `00-${traceId}-${callerSpan}-01`);
      const r = await client.req(
        'toolplane.v1.tools.execute',
        { org_id: org, tool_name: 'traced_echo', args: { text: 'hop' } },
        { headers: h, timeoutMs: 30_000 },
      );
      expect(r).toMatchObject({ status: 'success', func_return: 'hop', trace_id: traceId });
      // The HTTP request to the MCP server carries the same trace.
      expect(String(mcp.observed.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));

      const callIn = 'process toolplane.internal.v1.mcp-tools.call';
      const ends = [
        callIn,
        'serialize result',
        'process toolplane.v1.tools.execute',
        'send toolplane.internal.v1.mcp-tools.call',
      ];
      const spans = await receiver.waitFor(
        traceId,
        (s) =>
          ends.every((n) => s.some((x) => x.name === n)) &&
          s.some((x) => x.service === 'registry') &&
          linked(s, callerSpan),
      );
      expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['executor', 'registry', 'mcp-sync']));
      const root = spans.find((s) => s.name === 'process toolplane.v1.tools.execute')!;
      expect(root).toMatchObject({ service: 'executor', parentSpanId: callerSpan });
      const mcpIn = spans.find((s) => s.name === callIn)!;
      expect(mcpIn.service).toBe('mcp-sync');
      const executorOut = spans.find((s) => s.spanId === mcpIn.parentSpanId)!;
      expect(executorOut).toMatchObject({ service: 'executor', name: 'send toolplane.internal.v1.mcp-tools.call' });
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      for (const s of spans) if (s !== root) expect(byId.has(s.parentSpanId)).toBe(true);
      expect(JSON.stringify(spans)).not.toContain('"hop"');
    } finally {
      await mcp.stop();
    }
  });

  it('continues an MCP client’s traceparent through the gateway, executor and runner, with MCP-convention spans', async () => {
    const gateway = stack.apps.get('mcp-gateway')!;
    const base = `http://127.0.0.1:${gateway.httpPort}`;
    await client.req('toolplane.v1.agents.tools.attach', {
      org_id: org,
      agent_id: 'traced-agent',
      tool_names: ['roll_d20'],
    });
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    // The SDK client sends the header on every HTTP request of its session.
    const token = await client.tokenFor(org);
    const mcp = new Client({ name: 'traced', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp/agents/traced-agent`), {
        requestInit: { headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${callerSpan}-01` } },
      }),
    );
    try {
      const r = await mcp.callTool({ name: 'roll_d20', arguments: {} });
      expect(r.isError).toBeFalsy();
      expect((r._meta as Record<string, string>)['toolplane/trace_id']).toBe(traceId);
      const want = [
        'tools/call roll_d20',
        'send toolplane.v1.tools.execute',
        'process toolplane.v1.tools.execute',
        'run sandbox',
      ];
      const spans = await receiver.waitFor(
        traceId,
        (s) =>
          want.every((n) => s.some((x) => x.name === n)) &&
          s.some((x) => x.name === 'POST /mcp/agents/{agent_id}' && x.attributes['mcp.method.name'] === 'tools/call'),
      );
      const http = spans.find(
        (s) => s.name === 'POST /mcp/agents/{agent_id}' && s.attributes['mcp.method.name'] === 'tools/call',
      )!;
      expect(http).toMatchObject({ service: 'mcp-gateway', parentSpanId: callerSpan });
      const call = spans.find((s) => s.name === 'tools/call roll_d20')!;
      expect(call).toMatchObject({ service: 'mcp-gateway', parentSpanId: http.spanId });
      expect(call.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'roll_d20',
        'gen_ai.operation.name': 'execute_tool',
      });
      const out = spans.find((s) => s.name === 'send toolplane.v1.tools.execute' && s.service === 'mcp-gateway')!;
      expect(out.parentSpanId).toBe(call.spanId);
      const executorIn = spans.find((s) => s.name === 'process toolplane.v1.tools.execute')!;
      expect(executorIn).toMatchObject({ service: 'executor', parentSpanId: out.spanId });
      expect(spans.find((s) => s.name === 'run sandbox')?.service).toBe('runner-local');
      expect(JSON.stringify(spans)).not.toContain(token);
    } finally {
      await mcp.close();
    }
  });

  it('names the end user on the execution span (enduser.id), and in no log line', async () => {
    const user = `auth0|trace-user-${randomBytes(4).toString('hex')}`;
    const traceId = randomBytes(16).toString('hex');
    const h = client.headers();
    h.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    const r = await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'roll_d20', args: {}, user_id: user },
      { headers: h },
    );
    expect(r.status).toBe('success');
    const spans = await receiver.waitFor(traceId, (s) =>
      s.some((x) => x.name === 'process toolplane.v1.tools.execute'),
    );
    const root = spans.find((s) => s.name === 'process toolplane.v1.tools.execute')!;
    expect(root.attributes).toMatchObject({ 'enduser.id': user, 'toolplane.execution.id': r.execution_id });
    for (const app of stack.apps.values()) expect([app.name, app.output().includes(user)]).toEqual([app.name, false]);
  });

  it('never puts argument or env values on spans', async () => {
    const traceId = randomBytes(16).toString('hex');
    const h = client.headers();
    h.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    await client.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'roll_d20', args: {}, env: { API_KEY: 'sekret-value-123' } },
      { headers: h },
    );
    // The runner's and the executor's spans come in separate batches: wait for both.
    const spans = await receiver.waitFor(
      traceId,
      (s) => s.some((x) => x.name === 'run sandbox') && s.some((x) => x.name === 'serialize result'),
    );
    expect(spans.length).toBeGreaterThan(3);
    expect(JSON.stringify(spans)).not.toContain('sekret-value-123');
  });
});

/** Every span's parent has arrived (the caller's span stands outside the trace we receive). */
function linked(spans: Array<{ spanId: string; parentSpanId: string }>, callerSpan: string): boolean {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.every((s) => s.parentSpanId === callerSpan || ids.has(s.parentSpanId));
}
