import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFORMANCE_TOOLS, ConformanceUpstream } from '../support/conformance-upstream';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { ROOT } from '../support/env';
import { agentEndpoint, gatewayUrl } from '../support/gateway';
import { startEverythingHttp } from '../support/mcp-servers';
import { RawClient } from '../support/nats-client';
import { startApp, stopProcess, type RunningApp } from '../support/stack';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) in `server` mode against
 * the MCP gateway: an agent's endpoint serving the tools of test/support/conformance-upstream.ts
 * (synced by mcp-sync into an org, every tool attached), reached through a loopback proxy that
 * adds the org's bearer token (the suite's `server --url` has no auth option) and forwards the
 * rest byte for byte — Host and Origin untouched, SSE streamed. The suite's checks decide.
 *
 * | Scenario                                    | Here           | Why                                                                 |
 * |---------------------------------------------|----------------|---------------------------------------------------------------------|
 * | server-initialize, ping                     | applicable     | the gateway is an MCP server                                        |
 * | tools-list, json-schema-2020-12             | applicable     | definitions as the upstream gave them (`$schema`, `$defs` kept)     |
 * | tools-call-simple-text/-image/-audio/       | applicable     | an MCP upstream's content comes back as it sent it                  |
 * |   -embedded-resource/-mixed-content/-error  |                |                                                                     |
 * | server-sse-multiple-streams                 | applicable     | concurrent POSTs of one session                                     |
 * | server-sse-polling                          | applicable     | the gateway answers a call with no progress token as JSON (the      |
 * |                                             |                |   scenario's SSE checks then do not apply); run again against a     |
 * |                                             |                |   gateway that always streams: 2 WARNINGs, which the upstream alone |
 * |                                             |                |   gives too (STREAMING_WARNINGS)                                    |
 * | dns-rebinding-protection                    | applicable     | Host/Origin checked before the token; a loopback Host's own origin  |
 * |                                             |                |   is accepted, any other origin not configured is refused (403)     |
 * | tools-call-with-progress                    | applicable     | the upstream's progress, relayed mcp-sync → executor → gateway      |
 * | tools-call-with-logging                     | not applicable | needs logging/setLevel and an upstream's log notifications relayed  |
 * | tools-call-sampling, tools-call-elicitation | not applicable | an upstream's requests to the client are not relayed (an agent's    |
 * |   elicitation-sep1034-defaults,             |                |   tool calls have no user session; the gateway elicits only for     |
 * |   elicitation-sep1330-enums                 |                |   Toolplane's own approvals)                                        |
 * | logging-set-level                           | not applicable | the gateway serves tools only: no logging capability                |
 * | completion-complete                         | not applicable | no prompts or resource templates to complete                        |
 * | resources-* (6), prompts-* (5)              | not applicable | the gateway serves tools only                                       |
 *
 * Then the reference server-everything, directly and through the gateway (synced into another
 * org, every tool attached), on the tool scenarios: the same checks pass and fail, except where
 * DIFFERENCES says why.
 */

const CLI = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const SCENARIO_TIMEOUT_MS = 45_000;

const APPLICABLE = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'server-sse-polling',
  'dns-rebinding-protection',
  'tools-call-with-progress',
];
const NOT_APPLICABLE = [
  'tools-call-with-logging',
  'tools-call-sampling',
  'tools-call-elicitation',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
  'logging-set-level',
  'completion-complete',
  ...[
    'resources-list',
    'resources-read-text',
    'resources-read-binary',
    'resources-templates-read',
    'resources-subscribe',
    'resources-unsubscribe',
  ],
  ...[
    'prompts-list',
    'prompts-get-simple',
    'prompts-get-with-args',
    'prompts-get-embedded-resource',
    'prompts-get-with-image',
  ],
];

/** Scenarios about SSE streams: run again against a gateway that answers every call on a stream (GATEWAY_JSON_RESPONSES=false). */
const SSE_SCENARIOS = ['server-sse-polling', 'server-sse-multiple-streams'];

/**
 * WARNINGs a scenario gives on a streaming gateway whatever the server: server-sse-polling POSTs
 * with `mcp-protocol-version: 2025-03-26`, and the SDK's transport sends the priming event (and
 * its retry field) only to clients of 2025-11-25 or later — the upstream alone gives the same two.
 */
const STREAMING_WARNINGS: Record<string, string[]> = {
  'server-sse-polling': ['server-sse-priming-event', 'server-sse-retry-field'],
};

/** The tool scenarios run against server-everything directly and through the gateway. */
const EVERYTHING_SCENARIOS = [
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'json-schema-2020-12',
];
/**
 * server-everything has none of the suite's test_* tools. For an unknown tool it answers a result
 * with isError and a text, which the simple-text and error checks accept; the gateway answers a
 * JSON-RPC error -32602, as the spec's "Protocol Errors: Unknown tools" says, which they do not.
 */
const DIFFERENCES: Record<string, { direct: 'passed'; gateway: 'failed'; reason: string }> = {
  'tools-call-simple-text': {
    direct: 'passed',
    gateway: 'failed',
    reason: 'unknown tool: isError result upstream, JSON-RPC -32602 at the gateway',
  },
  'tools-call-error': {
    direct: 'passed',
    gateway: 'failed',
    reason: 'unknown tool: isError result upstream, JSON-RPC -32602 at the gateway',
  },
};

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

interface Outcome {
  code: number | null;
  checks: Check[];
  passed: string[];
  failed: string[];
  warnings: string[];
  output: string;
}

const ids = (checks: Check[], status: Check['status']) =>
  [...new Set(checks.filter((c) => c.status === status).map((c) => c.id))].sort();

/** One scenario, one CLI process (the Node running jest: the suite needs a recent one); its checks.json read back. */
function runScenario(url: string, scenario: string): Promise<Outcome> {
  const outDir = mkdtempSync(join(tmpdir(), 'tp-gw-conformance-'));
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, 'server', '--url', url, '--scenario', scenario, '-o', outDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (d: Buffer) => (output = (output + d.toString()).slice(-20_000));
    p.stdout.on('data', keep);
    p.stderr.on('data', keep);
    const killer = setTimeout(() => p.kill('SIGKILL'), SCENARIO_TIMEOUT_MS);
    p.once('close', (code) => {
      clearTimeout(killer);
      let checks: Check[] = [];
      try {
        const run = readdirSync(outDir).find((d) => d.startsWith(`server-${scenario}-`));
        checks = run ? (JSON.parse(readFileSync(join(outDir, run, 'checks.json'), 'utf8')) as Check[]) : [];
      } catch (e) {
        checks = [{ id: 'unreadable-checks', status: 'FAILURE', errorMessage: (e as Error).message }];
      }
      rmSync(outDir, { recursive: true, force: true });
      resolve({
        code,
        checks,
        passed: ids(checks, 'SUCCESS'),
        failed: ids(checks, 'FAILURE'),
        warnings: ids(checks, 'WARNING'),
        output: output.replace(/\x1b\[[0-9;]*m/g, ''),
      });
    });
  });
}

/**
 * A loopback reverse proxy that adds `Authorization: Bearer <token>` and changes nothing else:
 * method, path, headers (Host and Origin as the client sent them), and both bodies streamed as
 * they come (SSE events reach the client when the gateway writes them).
 */
async function bearerProxy(target: string, token: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const to = new URL(target);
  const server: Server = createServer((req, res) => {
    const up = request(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.rawHeaders);
        res.flushHeaders();
        upRes.pipe(res);
      },
    );
    up.once('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.once('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** tools/list of `url` by the SDK's client, with the capabilities the suite's client declares. */
async function listTools(url: string): Promise<Tool[]> {
  const client = new Client(
    { name: 'conformance-compare', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    return (await client.listTools()).tools;
  } finally {
    await client.close();
  }
}

const report = (o: Outcome) =>
  `${o.checks
    .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
    .map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`)
    .join('\n')}\n--- output ---\n${o.output.slice(-3000)}`;

describe('MCP conformance suite (server scenarios) against the gateway', () => {
  let nats: RawClient;
  const upstream = new ConformanceUpstream();
  const stops: Array<() => Promise<void>> = [];
  const agent = 'conformance-agent';
  let gatewayAgentUrl: string;
  let streamingAgentUrl: string;
  let streamingGateway: RunningApp | undefined;
  let everythingDirect: string;
  let everythingViaGateway: string;
  const results = { applicable: 0, passed: 0, checks: 0, sameAsDirect: 0, compared: 0 };

  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  /** Syncs `url` into a new org, attaches every tool it gave to the agent, and proxies the agent's endpoint with the org's token. */
  const serveThroughGateway = async (
    label: string,
    url: string,
    gateways: string[] = [gatewayUrl()],
  ): Promise<{ endpoint: string; tools: string[]; endpoints: string[] }> => {
    const org = uniqueOrg(label);
    const added = ok(
      await nats.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: org, server: { name: label, transport: 'streamable_http', url } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(added.sync).toMatchObject({ complete: true, errors: [], invalid: 0 });
    const tools: string[] = ok(
      await nats.req('toolplane.v1.tools.list', { org_id: org, tags: [`mcp:${label}`], limit: 200 }),
    ).tools.map((t: any) => t.name);
    ok(await nats.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: agent, tool_names: tools }));
    const endpoints: string[] = [];
    for (const gateway of gateways) {
      const proxy = await bearerProxy(gateway, await nats.tokenFor(org));
      stops.push(proxy.stop);
      endpoints.push(agentEndpoint(agent, proxy.url));
    }
    return { endpoint: endpoints[0]!, tools, endpoints };
  };

  beforeAll(async () => {
    nats = await RawClient.connect(testPrefix());
    await upstream.start();
    stops.push(() => upstream.stop());
    const everything = await startEverythingHttp('streamableHttp');
    stops.push(everything.stop);
    everythingDirect = everything.url;
    // A second gateway of the run's stack that answers every call on an SSE stream.
    streamingGateway = await startApp('mcp-gateway', {
      prefix: testPrefix(),
      databaseUrl: testDatabaseUrl(),
      appEnv: { 'mcp-gateway': { GATEWAY_JSON_RESPONSES: 'false' } },
    });
    stops.push(() => stopProcess(streamingGateway!.proc).then(() => undefined));
    const served = await serveThroughGateway('conformance', upstream.url, [
      gatewayUrl(),
      `http://127.0.0.1:${streamingGateway.httpPort}`,
    ]);
    expect(served.tools.sort()).toEqual(CONFORMANCE_TOOLS.map((t) => t.def.name).sort());
    gatewayAgentUrl = served.endpoint;
    streamingAgentUrl = served.endpoints[1]!;
    everythingViaGateway = (await serveThroughGateway('everything', everything.url)).endpoint;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(stops.map((s) => s().catch(() => undefined)));
    await nats.close();
    process.stdout.write(
      `\nMCP gateway conformance (server scenarios): ${results.passed}/${results.applicable} applicable passed (${results.checks} checks), ` +
        `${NOT_APPLICABLE.length} not applicable; ` +
        `server-everything direct vs through the gateway: ${results.sameAsDirect}/${results.compared} scenarios with the same outcome, ${Object.keys(DIFFERENCES).length} explained difference(s)\n`,
    );
  });

  it('accounts for every server scenario the suite lists, once', async () => {
    const listing = await new Promise<string>((resolve) => {
      const p = spawn(process.execPath, [CLI, 'list', '--server'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.once('close', () => resolve(out));
    });
    const suite = [...listing.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]!).sort();
    const ours = [...APPLICABLE, ...NOT_APPLICABLE].sort();
    expect(suite).toHaveLength(32);
    expect(ours).toEqual(suite);
  });

  it.each(APPLICABLE)(
    '%s passes through the gateway',
    async (scenario) => {
      results.applicable += 1;
      const o = await runScenario(gatewayAgentUrl, scenario);
      expect({
        scenario,
        exit: o.code,
        failed: o.failed,
        warnings: o.warnings,
        report: o.failed.length || o.code ? report(o) : '',
      }).toEqual({
        scenario,
        exit: 0,
        failed: [],
        warnings: [],
        report: '',
      });
      // Something was checked (server-sse-polling's verdicts are infos here: the JSON answer is one).
      if (scenario === 'server-sse-polling')
        expect(o.checks.some((c) => c.id === 'server-sse-content-type')).toBe(true);
      else expect(o.passed.length).toBeGreaterThan(0);
      results.passed += 1;
      results.checks += o.passed.length;
    },
    60_000,
  );

  it.each(SSE_SCENARIOS)(
    '%s passes through a gateway that answers every call on an SSE stream',
    async (scenario) => {
      const o = await runScenario(streamingAgentUrl, scenario);
      expect({
        scenario,
        exit: o.code,
        failed: o.failed,
        warnings: o.warnings,
        report: o.failed.length || o.code ? report(o) : '',
      }).toEqual({
        scenario,
        exit: 0,
        failed: [],
        warnings: STREAMING_WARNINGS[scenario] ?? [],
        report: '',
      });
      if (scenario === 'server-sse-polling')
        expect(o.checks.some((c) => c.description === 'Received tool response on POST stream')).toBe(true);
      else expect(o.passed.length).toBeGreaterThan(0);
    },
    60_000,
  );

  it('by default accepts only a loopback Host’s own origin: another port or another name is refused', async () => {
    const { host } = new URL(gatewayAgentUrl);
    const initialize = (origin: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'origin-test', version: '1' },
          },
        });
        const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin };
        const r = request(gatewayAgentUrl, { method: 'POST', headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        r.once('error', reject);
        r.end(body);
      });
    expect(await initialize(`http://${host}`)).toBe(200);
    expect(await initialize(`http://${host.replace(/:\d+$/, ':1')}`)).toBe(403);
    expect(await initialize(`http://${host.replace('127.0.0.1', 'localhost')}`)).toBe(403);
    expect(await initialize(`https://${host}`)).toBe(403);
  });

  it('the tool calls reached the upstream through Toolplane', () => {
    expect(new Set(upstream.calls)).toEqual(
      new Set([
        'test_simple_text',
        'test_image_content',
        'test_audio_content',
        'test_embedded_resource',
        'test_multiple_content_types',
        'test_error_handling',
        'test_reconnection',
        'test_tool_with_progress',
      ]),
    );
  });

  it('serves server-everything’s tool definitions as the server gave them (title, description, annotations, output schema, parameters)', async () => {
    const direct = new Map((await listTools(everythingDirect)).map((t) => [t.name, t]));
    const via = await listTools(everythingViaGateway);
    expect(via.length).toBeGreaterThanOrEqual(10);
    expect(via.some((t) => t.outputSchema)).toBe(true);
    const shown = (t: Tool) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      annotations: t.annotations,
      outputSchema: t.outputSchema,
      properties: t.inputSchema.properties,
      required: t.inputSchema.required,
    });
    for (const t of via) expect(shown(t)).toEqual(shown(direct.get(t.name)!));
  });

  it.each(EVERYTHING_SCENARIOS)(
    '%s: server-everything gives the same outcome directly and through the gateway',
    async (scenario) => {
      const direct = await runScenario(everythingDirect, scenario);
      const via = await runScenario(everythingViaGateway, scenario);
      const outcome = (o: Outcome) => ({ passed: o.passed, failed: o.failed, warnings: o.warnings });
      results.compared += 1;
      const diff = DIFFERENCES[scenario];
      if (!diff) {
        expect({ scenario, ...outcome(via) }).toEqual({ scenario, ...outcome(direct) });
        results.sameAsDirect += 1;
        return;
      }
      // An explained difference: the scenario's one check passes directly and fails through the gateway, for the reason given.
      expect({ scenario, direct: outcome(direct), via: outcome(via) }).toEqual({
        scenario,
        direct: { passed: [scenario], failed: [], warnings: [] },
        via: { passed: [], failed: [scenario], warnings: [] },
      });
      expect(via.checks.find((c) => c.id === scenario)?.errorMessage).toMatch(/Unknown tool/);
    },
    60_000,
  );
});
