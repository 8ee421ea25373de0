/**
 * Internal subjects are service-only, and service traffic is sealed: tried from a plain client on
 * an open NATS (no NATS users, as on these machines), as an eavesdropper and as a replayer.
 */
import type { Msg } from '@nats-io/transport-node';
import { Headers } from '@toolplane/contracts';
import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startCallStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

const RUN = 'toolplane.internal.v1.runners.local.run';
const RESOLVE = 'toolplane.internal.v1.execution-env.resolve';

describe('service-only internal subjects and sealed service traffic', () => {
  // Its own stack: the runner's counters and the bus traffic below are this file's alone.
  const prefix = `${testPrefix()}seal`;
  let stack: Stack;
  let client: RawClient;
  const org = uniqueOrg('seal');
  const SECRET = `sk-seal-${Math.random().toString(36).slice(2)}-value`;
  const runsServed = async () => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return [...text.matchAll(/^toolplane_runner_runs_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const runRequest = (marker: string) => ({
    org_id: org,
    tool_id: 'tool-00000000-0000-4000-8000-000000000abc',
    function_name: 'f',
    source_code: `def f():\n    return "${marker}"\n`,
    source_type: 'python',
    args: {},
    env: {},
    timeout_ms: 5000,
  });

  beforeAll(async () => {
    stack = await startCallStack(prefix);
    client = await RawClient.connect(prefix);
    await client.req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'API_KEY', value: SECRET });
    const up = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool(
          'leak_key',
          'import os\nprint("key", os.environ["API_KEY"])\nreturn os.environ["API_KEY"]',
        ),
      },
    });
    expect(up.tool.name).toBe('leak_key');
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('refuses an internal request without a service seal, org token or not, and does no work', async () => {
    const before = await runsServed();
    const plain = await client.req(RUN, runRequest('ran-unsealed'), { as: null, token: null });
    expect(plain.error).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: expect.stringMatching(/internal: only Toolplane services/),
      retryable: false,
    });
    const withToken = await client.req(RUN, runRequest('ran-with-token'), { as: null });
    expect(withToken.error.code).toBe('UNAUTHENTICATED');
    const env = await client.req(
      RESOLVE,
      { org_id: org, tool_id: runRequest('').tool_id, tool_name: 't', project_id: null, provider: 'local' },
      { as: null },
    );
    expect(env.error.code).toBe('UNAUTHENTICATED');
    expect(JSON.stringify(env)).not.toContain(SECRET);
    // The sealed request of the allowed caller does run: the counter moves only for it.
    const sealed = await client.req(RUN, runRequest('ran-sealed'), { as: 'executor' });
    expect(sealed.func_return).toBe('ran-sealed');
    expect(await runsServed()).toBe(before + 1);
  });

  it('admits only the services a subject names as its callers', async () => {
    const asRunner = await client.req(
      RESOLVE,
      { org_id: org, tool_id: runRequest('').tool_id, tool_name: 't', project_id: null, provider: 'local' },
      { as: 'runner-local' },
    );
    expect(asRunner.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'Service runner-local may not call toolplane.internal.v1.execution-env.resolve',
    });
    expect(JSON.stringify(asRunner)).not.toContain(SECRET);
    const asMcp = await client.req(RUN, runRequest('ran-as-mcp'), { as: 'mcp-sync' });
    expect(asMcp.error.code).toBe('FORBIDDEN');
    // The same request from the executor is served.
    const asExecutor = await client.req(
      RESOLVE,
      { org_id: org, tool_id: runRequest('').tool_id, tool_name: 't', project_id: null, provider: 'local' },
      { as: 'executor' },
    );
    expect(asExecutor.env.API_KEY).toBe(SECRET);
  });

  it("refuses the executor's own sealed message replayed, moved to another subject, re-timed or with another body", async () => {
    // Capture a real executor → runner message (a plain subscriber gets a copy; it cannot read it).
    const captured: Msg[] = [];
    const sub = client.nc.subscribe(client.subject(RUN), {
      callback: (_e, m) => {
        captured.push(m);
      },
    });
    await client.nc.flush();
    const r = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'leak_key', args: {} });
    expect(r.status).toBe('success');
    sub.unsubscribe();
    expect(captured).toHaveLength(1);
    const m = captured[0]!;
    const header = m.headers!.get(Headers.SERVICE_SEAL);
    expect(header).toMatch(/^v1 executor \d+ [A-Za-z0-9_-]{16}$/);
    expect(Buffer.from(m.data).toString('latin1')).not.toContain('leak_key');

    const send = async (subject: string, seal: string, data: Uint8Array) => {
      const h = client.headers();
      h.set(Headers.SERVICE_SEAL, seal);
      const reply = await client.nc.request(client.subject(subject), data, { headers: h, timeout: 10_000 });
      return JSON.parse(new TextDecoder().decode(reply.data));
    };
    const before = await runsServed();
    expect((await send(RUN, header, m.data)).error).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: 'Service credential refused: replayed message',
    });
    expect((await send(RESOLVE, header, m.data)).error.message).toMatch(/does not open/);
    const flipped = Buffer.from(m.data);
    flipped[flipped.length - 1]! ^= 1;
    const [v, app, , nonce] = header.split(' ');
    expect(
      (await send(RUN, `${v} ${app} ${Date.now()} ${nonce!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`, flipped))
        .error.message,
    ).toMatch(/does not open/);
    expect((await send(RUN, `${v} ${app} ${Date.now() - 10 * 60_000} ${nonce}`, m.data)).error.message).toMatch(
      /clock-skew window/,
    );
    expect((await send(RUN, `${v} registry ${Date.now()} ${nonce}`, m.data)).error.message).toMatch(/does not open/);
    expect(await runsServed()).toBe(before);
    // Nor in another deployment on the same NATS (another prefix), even one sharing the keys as these tests do.
    const h = client.headers();
    h.set(Headers.SERVICE_SEAL, header);
    const elsewhere = await client.nc.request(`${testPrefix()}.${RUN}`, m.data, { headers: h, timeout: 10_000 });
    expect(JSON.parse(new TextDecoder().decode(elsewhere.data)).error.message).toMatch(/does not open/);
  });

  it('shows an eavesdropper on every subject and inbox no secret, and no call data on service traffic', async () => {
    // A write of the org's credentials ends the executor's reuse of its env: this call resolves it anew.
    await client.req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'OTHER', value: 'other-value' });
    const seen: Array<{ subject: string; text: string }> = [];
    const sniff = (subject: string) =>
      client.nc.subscribe(subject, {
        callback: (_e, m) => {
          seen.push({
            subject: m.subject,
            text: `${Buffer.from(m.data).toString('latin1')}\n${m.headers?.toString() ?? ''}`,
          });
        },
      });
    const subs = [sniff(`${client.prefix}.>`), sniff('_INBOX.>')];
    await client.nc.flush();
    const r = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'leak_key', args: {} });
    expect(r).toMatchObject({ status: 'success', func_return: '***', stdout: ['key ***\n'] });
    await client.nc.flush();
    for (const s of subs) s.unsubscribe();

    const internal = seen.filter((m) => m.subject.includes('.toolplane.internal.'));
    expect(internal.map((m) => m.subject.slice(client.prefix.length + 1)).sort()).toEqual(
      expect.arrayContaining([RESOLVE, RUN]),
    );
    // Replies to services go to their own inboxes (_INBOX.<app>.…): sealed like the requests.
    const serviceReplies = seen.filter((m) =>
      /^_INBOX\.(executor|registry|credentials|runner-local|mcp-sync|schema)\./.test(m.subject),
    );
    expect(serviceReplies.length).toBeGreaterThan(0);
    for (const m of seen) expect([m.subject, m.text.includes(SECRET)]).toEqual([m.subject, false]);
    for (const m of [...internal, ...serviceReplies]) {
      expect([m.subject, /leak_key|API_KEY|os\.environ/.test(m.text)]).toEqual([m.subject, false]);
    }
  });
});
