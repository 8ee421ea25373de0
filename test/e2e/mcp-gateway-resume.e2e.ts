/**
 * Resumable SSE streams across gateway replicas (MCP Streamable HTTP, "Resumability and
 * Redelivery"), two gateways behind a round-robin proxy. A long tools/call (server-everything's
 * trigger-long-running-operation, progress at each step) whose connection drops while its replica
 * lives is resumed with GET and Last-Event-ID on the other replica: the progress missed, the rest,
 * and the result, each once and in order; another session cannot resume it. A call whose serving
 * replica is SIGKILLed ends for the SDK's client with an error saying the outcome is unknown and
 * where it is recorded, while the executor runs the call to its end and records it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { startEverythingHttp } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { RoundRobinProxy } from '../support/round-robin-proxy';
import { startApp, stopProcess, type RunningApp } from '../support/stack';

const TOOL = 'trigger-long-running-operation';
const STEPS = 6;

/** An SSE response read event by event. */
function events(res: Response, onRetry?: (ms: number) => void): ReadableStreamDefaultReader<EventSourceMessage> {
  return res
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream(onRetry ? { onRetry } : {}))
    .getReader();
}

/** The JSON-RPC messages of the events read, with their SSE ids. */
interface Seen {
  id: string;
  message: any;
}

describe('MCP gateway: resumable streams across replicas', () => {
  let nats: RawClient;
  let gateways: RunningApp[] = [];
  let proxy: RoundRobinProxy;
  let base: string;
  const clients: Client[] = [];
  const stops: Array<() => Promise<void>> = [];
  const org = uniqueOrg('gw-resume');
  const agent = 'agent-resume';
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    const opts = {
      prefix: testPrefix(),
      databaseUrl: testDatabaseUrl(),
      env: { GATEWAY_STREAM_HEARTBEAT_MS: '300', GATEWAY_SSE_RETRY_MS: '200' },
    };
    gateways = await Promise.all([startApp('mcp-gateway', opts), startApp('mcp-gateway', opts)]);
    proxy = new RoundRobinProxy(gateways.map((g) => g.httpPort!));
    base = await proxy.start();
    const everything = await startEverythingHttp('streamableHttp');
    stops.push(everything.stop);
    ok(
      await nats.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: 'everything', transport: 'streamable_http', url: everything.url } },
        { timeoutMs: 30_000 },
      ),
    );
    ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: [TOOL] }));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await proxy?.stop();
    await Promise.all(gateways.map((g) => stopProcess(g.proc)));
    await Promise.all(stops.map((s) => s()));
    await nats.close();
  });

  const headersOf = (token: string, sessionId: string) => ({
    authorization: `Bearer ${token}`,
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  });

  it('resumes a dropped POST stream on the other replica: the progress missed, the rest and the result, once each and in order', async () => {
    const token = await nats.tokenFor(org);
    const { client, transport } = await mcpClient(agentEndpoint(agent, base), token);
    clients.push(client);
    const sessionId = transport.sessionId!;
    const url = agentEndpoint(agent, base);
    const before = proxy.taken.length;
    const drop = new AbortController();
    const post = await fetch(url, {
      method: 'POST',
      signal: drop.signal,
      headers: {
        ...headersOf(token, sessionId),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 77,
        method: 'tools/call',
        params: { name: TOOL, arguments: { duration: 3, steps: STEPS }, _meta: { progressToken: 'p-77' } },
      }),
    });
    expect(post.status).toBe(200);
    const served = proxy.taken.slice(before).find((t) => t.rpc === 'tools/call')!.backend;
    // Read the priming event and the first progress, then drop the connection.
    const first: Seen[] = [];
    let retry: number | undefined;
    const reader = events(post, (ms) => (retry = ms));
    while (!first.some((e) => e.message?.method === 'notifications/progress')) {
      const { value } = await reader.read();
      if (!value) break;
      if (value.id === undefined) continue;
      first.push({ id: value.id, message: value.data ? JSON.parse(value.data) : undefined });
    }
    drop.abort();
    await reader.cancel().catch(() => undefined);
    expect(first[0]).toMatchObject({ message: undefined }); // the priming event: an id, no data, and when to reconnect
    expect(retry).toBe(200);
    expect(first.at(-1)!.message.params).toMatchObject({ progressToken: 'p-77', progress: 1 });

    // Another session of the same org does not find the stream.
    const stranger = await mcpClient(url, token);
    clients.push(stranger.client);
    const foreign = await fetch(url, {
      headers: {
        ...headersOf(token, stranger.transport.sessionId!),
        accept: 'text/event-stream',
        'last-event-id': first.at(-1)!.id,
      },
    });
    expect(foreign.status).toBe(404);
    await foreign.body?.cancel();

    // The same session resumes through the proxy, on the other replica.
    const resumedAt = proxy.taken.length;
    const get = await fetch(url, {
      headers: { ...headersOf(token, sessionId), accept: 'text/event-stream', 'last-event-id': first.at(-1)!.id },
    });
    expect(get.status).toBe(200);
    expect(proxy.taken[resumedAt]).toMatchObject({ method: 'GET', backend: 1 - served });
    const rest: Seen[] = [];
    const again = events(get);
    for (;;) {
      const { value, done } = await again.read();
      if (done) break;
      if (value.id !== undefined) rest.push({ id: value.id, message: JSON.parse(value.data) });
    }
    const progress = [...first, ...rest]
      .filter((e) => e.message?.method === 'notifications/progress')
      .map((e) => e.message.params.progress);
    expect(progress).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    expect(rest.at(-1)!.message).toMatchObject({
      jsonrpc: '2.0',
      id: 77,
      result: { content: [expect.objectContaining({ type: 'text' })] },
    });
    expect(rest.filter((e) => 'result' in e.message || 'error' in e.message)).toHaveLength(1);
    // Ids go on from where the client was: `<stream>_<n>`, n increasing.
    const numbers = [...first, ...rest].map((e) => Number(e.id.split('_').at(-1)));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);

    // A resume from the last event finds the stream complete: no body, the client stops resuming.
    const done = await fetch(url, {
      headers: { ...headersOf(token, sessionId), accept: 'text/event-stream', 'last-event-id': rest.at(-1)!.id },
    });
    expect(done.status).toBe(204);
  });

  it('answers the SDK client when the replica serving its call dies: an error naming where the outcome is, while the call itself runs to its end', async () => {
    const token = await nats.tokenFor(org);
    const { client } = await mcpClient(agentEndpoint(agent, base), token);
    clients.push(client);
    const since = new Date().toISOString();
    const seen: number[] = [];
    const before = proxy.taken.length;
    let killed: Promise<unknown> | undefined;
    const outcome = client
      .callTool({ name: TOOL, arguments: { duration: 4, steps: 8 } }, undefined, {
        timeout: 60_000,
        onprogress: (p) => {
          seen.push(p.progress);
          if (killed) return;
          // At the first progress, the replica holding the POST goes away.
          const served = proxy.taken.slice(before).find((t) => t.rpc === 'tools/call')!.backend;
          killed = stopProcess(gateways[served]!.proc, 'SIGKILL');
        },
      })
      .then(
        () => 'answered',
        (e: Error) => e.message,
      );
    expect(await outcome).toMatch(/replica serving this request stopped.*executions\.list/);
    expect(seen[0]).toBe(1);
    await killed;
    // The execution was not lost with the replica: the executor ran it to its end and recorded it.
    const rec = await expectEventually(
      async () => {
        const list = ok(await nats.req('toolplane.v1.executions.list', { org_id: org, agent_id: agent }));
        const calls = list.executions.filter((e: any) => e.tool_name === TOOL && e.created_at >= since);
        return calls.length === 1 && calls[0].status !== 'running' && calls[0];
      },
      { timeoutMs: 30_000 },
    );
    expect(rec.status).toBe('succeeded');
  });
});
