import { expectEventually } from '@toolplane/testing';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { OtlpReceiver } from '../support/otlp-receiver';
import { startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { WebhookServer, json } from '../support/webhook-server';

const SIGNING = 'whsec-e2e-signing-secret-0001';
// Tools: env_rev returns each variable reversed (so precedence can be read past the masking);
// env_echo prints and returns them as they are; env_raise raises with one in its message.
const ENV_REV = pythonTool(
  'env_rev',
  'import os\nreturn {n: (os.environ.get(n) or "")[::-1] for n in names.split(",")}',
  'names: str',
);
const ENV_ECHO = pythonTool(
  'env_echo',
  'import os, sys\nvals = {n: os.environ.get(n) for n in names.split(",")}\nprint(" ".join(f"{k}={v}" for k, v in vals.items()))\nprint("err:" + ",".join(str(v) for v in vals.values()), file=sys.stderr)\nreturn vals',
  'names: str',
);
const ENV_RAISE = pythonTool('env_raise', 'import os\nraise RuntimeError("token is " + os.environ["TOKEN"])');
const rev = (s: string) => [...s].reverse().join('');

describe('credentials in execution: precedence, webhook, masking, tenancy, no leaks', () => {
  const receiver = new OtlpReceiver();
  const hooks = new WebhookServer(SIGNING);
  let stack: Stack;
  let client: RawClient;
  const prefix = `${testPrefix()}cx`;
  const org = uniqueOrg('cred');
  const other = uniqueOrg('cred-other');
  const secrets = new Set<string>([SIGNING]);
  const traceIds: string[] = [];

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 20_000);
  const secret = (o: string, body: Record<string, unknown>) => {
    secrets.add(String(body.value));
    return req('toolplane.v1.secrets.set', { org_id: o, ...body });
  };
  const webhook = (url: string, extra: Record<string, unknown> = {}) =>
    req('toolplane.v1.webhooks.set', { org_id: org, url, signing_secret: SIGNING, ...extra });
  const execute = async (o: string, tool: string, extra: Record<string, unknown> = {}) => {
    const r = await req('toolplane.v1.tools.execute', { org_id: o, tool_name: tool, ...extra });
    if (r.trace_id ?? r.error?.trace_id) traceIds.push(r.trace_id ?? r.error.trace_id);
    return r;
  };

  beforeAll(async () => {
    await Promise.all([receiver.start(), hooks.start()]);
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
    for (const o of [org, other])
      for (const source_code of [ENV_REV, ENV_ECHO, ENV_RAISE])
        await req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code } });
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await Promise.all([receiver.stop(), hooks.stop()]);
  });

  it('merges sandbox vars < webhook < agent secrets < per-call env < reserved ids', async () => {
    for (const k of ['A', 'B', 'C', 'D'])
      await secret(org, { scope: 'sandbox', key: `P_${k}`, value: `sandbox-${k}-value` });
    for (const k of ['C', 'D'])
      await secret(org, { scope: 'agent', agent_id: 'agent-1', key: `P_${k}`, value: `agent-${k}-value` });
    await secret(org, { scope: 'agent', agent_id: 'agent-1', key: 'TOOLPLANE_AGENT_ID_X', value: 'not-reserved-1' });
    const url = hooks.route('/precedence', (_h, res) =>
      json(res, 200, {
        env: { P_B: 'webhook-B-value', P_C: 'webhook-C-value', P_D: 'webhook-D-value', TOOLPLANE_ORG_ID: 'evil-org' },
      }),
    );
    await webhook(url);
    secrets.add('webhook-B-value').add('webhook-C-value').add('webhook-D-value');
    const r = await execute(org, 'env_rev', {
      args: { names: 'P_A,P_B,P_C,P_D,TOOLPLANE_ORG_ID,TOOLPLANE_AGENT_ID,TOOLPLANE_TOOL_ID' },
      agent_id: 'agent-1',
      env: { P_D: 'call-D-value', TOOLPLANE_ORG_ID: 'spoofed', TOOLPLANE_AGENT_ID: 'spoofed' },
    });
    expect(r.status).toBe('success');
    expect(r.func_return).toMatchObject({
      P_A: rev('sandbox-A-value'),
      P_B: rev('webhook-B-value'),
      P_C: rev('agent-C-value'),
      P_D: rev('call-D-value'),
      TOOLPLANE_ORG_ID: rev(org),
      TOOLPLANE_AGENT_ID: rev('agent-1'),
    });
    expect(rev(r.func_return.TOOLPLANE_TOOL_ID)).toMatch(/^tool-/);
    const sent = hooks.received.filter((h) => h.path === '/precedence');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      verified: true,
      body: { organization_id: org, agent_id: 'agent-1', tool_name: 'env_rev', project_id: null },
    });
    expect(sent[0]!.headers['toolplane-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
  });

  it('masks secret values in stdout, stderr, the return value and the error, unless a secret opts out', async () => {
    await req('toolplane.v1.webhooks.delete', { org_id: org });
    await secret(org, { scope: 'agent', agent_id: 'agent-m', key: 'TOKEN', value: 'sk-mask-me-0123456789' });
    await secret(org, {
      scope: 'agent',
      agent_id: 'agent-m',
      key: 'PUBLIC_ID',
      value: 'public-id-visible',
      mask: false,
    });
    secrets.delete('public-id-visible');
    const r = await execute(org, 'env_echo', { args: { names: 'TOKEN,PUBLIC_ID' }, agent_id: 'agent-m' });
    expect(r.func_return).toEqual({ TOKEN: '***', PUBLIC_ID: 'public-id-visible' });
    expect(r.stdout).toEqual(['TOKEN=*** PUBLIC_ID=public-id-visible\n']);
    expect(r.stderr).toEqual(['err:***,public-id-visible\n']);
    const boom = await execute(org, 'env_raise', { args: {}, agent_id: 'agent-m' });
    expect(boom.status).toBe('error');
    expect(boom.func_return).toBe('Error executing function env_raise: RuntimeError: token is ***');
    expect(boom.error).toEqual({ code: 'TOOL_EXCEPTION', message: 'token is ***' });
    expect(boom.stderr.join('')).toContain('RuntimeError: token is ***');
    expect(JSON.stringify([r, boom])).not.toContain('sk-mask-me');
  });

  it("never gives one org's secrets or webhook to another org", async () => {
    await webhook(hooks.route('/tenant', (_h, res) => json(res, 200, { env: { TENANT_HOOK: 'tenant-hook-value' } })));
    const r = await execute(other, 'env_echo', { args: { names: 'TOKEN,P_A,P_C,TENANT_HOOK' }, agent_id: 'agent-m' });
    expect(r.func_return).toEqual({ TOKEN: null, P_A: null, P_C: null, TENANT_HOOK: null });
    expect(hooks.hitsOf('/tenant')).toBe(0);
    expect((await client.req('toolplane.v1.secrets.list', { org_id: other })).secrets).toEqual([]);
  });

  it('calls the webhook once per call, caches by org/agent/tool, and retries a dropped connection once', async () => {
    await webhook(
      hooks.route('/cached', (_h, res) => json(res, 200, { env: { CACHED: 'cached-hook-value' } })),
      { cache_ttl_ms: 60_000 },
    );
    secrets.add('cached-hook-value');
    for (let i = 0; i < 3; i++)
      expect((await execute(org, 'env_rev', { args: { names: 'CACHED' }, agent_id: 'a1' })).func_return.CACHED).toBe(
        rev('cached-hook-value'),
      );
    expect(hooks.hitsOf('/cached')).toBe(1);
    await execute(org, 'env_rev', { args: { names: 'CACHED' }, agent_id: 'a2' });
    expect(hooks.hitsOf('/cached')).toBe(2);

    await webhook(
      hooks.route('/flaky', (_h, res, n) => (n === 1 ? null : json(res, 200, { env: { FLAKY: 'flaky-hook-value' } }))),
    );
    secrets.add('flaky-hook-value');
    const r = await execute(org, 'env_rev', { args: { names: 'FLAKY' } });
    expect(r).toMatchObject({ status: 'success', func_return: { FLAKY: rev('flaky-hook-value') } });
    expect(hooks.hitsOf('/flaky')).toBe(2);
  });

  it('fails fast with CREDENTIALS_UNAVAILABLE when a fail_mode closed webhook is slow, broken, not JSON or too large', async () => {
    hooks.route('/slow', async (_h, res) => {
      await new Promise((r) => setTimeout(r, 3000).unref());
      json(res, 200, { env: {} });
    });
    hooks.route('/500', (_h, res) => json(res, 500, { error: 'down' }));
    hooks.route(
      '/not-json',
      (_h, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"env": {"A": "b"'),
    );
    hooks.route('/huge', (_h, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 10; i++) if (!res.destroyed) res.write(chunk);
      res.end();
    });
    const cases: Array<[string, RegExp]> = [
      ['/slow', /did not answer within 400 ms/],
      ['/500', /answered HTTP 500/],
      ['/not-json', /reply is not JSON/],
      ['/huge', /larger than 65536 bytes/],
    ];
    for (const [path, message] of cases) {
      await webhook(hooks.url(path), { timeout_ms: 400, fail_mode: 'closed' });
      // The slow hook answers after 3 s: "did not answer within 400 ms" is the timeout firing, not the answer.
      const r = await execute(org, 'env_rev', { args: { names: 'X' } });
      expect([path, r.error?.code, r.error?.retryable]).toEqual([path, 'CREDENTIALS_UNAVAILABLE', true]);
      expect(r.error.message).toMatch(message);
    }
  });

  it('continues without the webhook credentials when fail_mode is open, with a warning and a span event', async () => {
    await webhook(hooks.url('/500'), { fail_mode: 'open' });
    const r = await execute(org, 'env_rev', { args: { names: 'P_A' } });
    expect(r.status).toBe('success');
    expect(r.func_return.P_A).toBe(rev('sandbox-A-value'));
    expect(stack.apps.get('credentials')!.output()).toMatch(
      /credentials webhook of org \S+ failed \(the webhook answered HTTP 500\); fail_mode open/,
    );
    // Spans arrive in batches per service: wait for the credentials' and the executor's.
    const wanted = ['call credentials webhook', 'resolve env', 'process toolplane.internal.v1.execution-env.resolve'];
    const spans = await receiver.waitFor(r.trace_id, (s) => wanted.every((n) => s.some((x) => x.name === n)));
    const call = spans.find((s) => s.name === 'call credentials webhook')!;
    expect(call.service).toBe('credentials');
    expect(call.events).toEqual([
      {
        name: 'credentials.webhook.failed',
        attributes: { 'toolplane.webhook.failure': 'http_status', 'toolplane.webhook.fail_mode': 'open' },
      },
    ]);
    expect(spans.map((s) => s.name)).toEqual(
      expect.arrayContaining(['resolve env', 'process toolplane.internal.v1.execution-env.resolve']),
    );
  });

  it('keeps every secret value out of the logs of every app and out of every exported span', async () => {
    const last = traceIds.at(-1)!;
    await receiver.waitFor(last, (s) => s.some((x) => x.name === 'serialize result'));
    expect(secrets.size).toBeGreaterThan(10);
    // The last batches of the other traces: every trace exported, waited for (not a fixed pause).
    await expectEventually(() => {
      for (const id of traceIds) expect(receiver.spans.some((s) => s.traceId === id)).toBe(true);
    });
    const logs = [...stack.apps.values()].map((a) => a.output()).join('\n');
    expect(logs).toContain('set agent secret TOKEN');
    const spans = JSON.stringify(receiver.spans);
    for (const value of secrets) {
      expect([value, logs.includes(value)]).toEqual([value, false]);
      expect([value, spans.includes(value)]).toEqual([value, false]);
    }
  });
});
