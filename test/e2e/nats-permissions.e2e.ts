/**
 * The NATS layer of the trust boundary: a nats-server running the authorization Toolplane ships
 * (generated from the contracts), the services on it with their own users, and an agent runtime
 * that may send public requests and read its own replies — nothing else. The MCP gateway, the
 * HTTP edge, serves MCP with its own user and gets nothing it does not use. Each service's user
 * may send only what the service sends (nats-service-users.e2e.ts checks that subject by subject):
 * here a representative flow crosses every service of the stack, and neither the nats-server's log
 * nor any service's output shows one of their messages refused.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  APP_NAMES,
  EVENTS_STREAM,
  ExecutionCompleted,
  Headers,
  MCP_EVENTS_STREAM,
  MCP_SESSIONS_BUCKET,
  McpServerSynced,
  mcpStreamSubject,
  ToolCreated,
} from '@toolplane/contracts';
import { streamName } from '@toolplane/messaging';
import { expectEventually } from '@toolplane/testing';
import { agentUser, natsServerConfig } from '../../tools/deploy/nats-config';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { agentEndpoint, mcpClient } from '../support/gateway';
import { sealerOf } from '../support/identity';
import { RawClient } from '../support/nats-client';
import { freePort, startStack, stopProcess, type Stack } from '../support/stack';
import { ADD, pythonTool } from '../support/tools';
import { echoTool, FakeMcpServer } from '../support/mcp-servers';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

describe('NATS users and permissions (the shipped authorization)', () => {
  const prefix = `${testPrefix()}np`;
  const dir = mkdtempSync(join(tmpdir(), 'tp-nats-'));
  const passwords = Object.fromEntries(
    [...APP_NAMES, agentUser('acme'), agentUser('evil')].map((u) => [u, randomBytes(12).toString('hex')]),
  );
  let server: ChildProcess;
  let url: string;
  let stack: Stack;
  let acme: RawClient;
  const org = uniqueOrg('np');
  const natsLog = join(dir, 'nats-server.log');
  const fakes: FakeMcpServer[] = [];

  const as = (user: string, extra: Record<string, unknown> = {}): Promise<NatsConnection> =>
    connect({ servers: url, user, pass: passwords[user], inboxPrefix: `_INBOX.${user}`, ...extra });
  /** The error a subscription gets from the server (it never gets a message). */
  const subscriptionRefused = async (nc: NatsConnection, subject: string): Promise<string> => {
    const sub = nc.subscribe(subject);
    const closed = sub.closed.then((e) => (e ? e.message : 'closed without error'));
    await nc.flush();
    return closed;
  };

  beforeAll(async () => {
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    writeFileSync(join(dir, 'toolplane-auth.conf'), natsServerConfig({ prefix, agents: ['acme', 'evil'], passwords }));
    writeFileSync(
      join(dir, 'nats-server.conf'),
      `listen: 127.0.0.1:${port}\njetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }\ninclude ./toolplane-auth.conf\n`,
    );
    server = spawn(NATS_SERVER, ['-c', join(dir, 'nats-server.conf'), '-l', natsLog], { stdio: 'ignore' });
    await expectEventually(async () => (await as(agentUser('acme'))).close(), { timeoutMs: 20_000, intervalMs: 100 });
    const appEnv = Object.fromEntries(
      APP_NAMES.map((app) => [app, { NATS_URL: url, NATS_USER: app, NATS_PASSWORD: passwords[app]! }]),
    );
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'mcp-sync', 'web-tools', 'mcp-gateway'],
      env: { LOG_LEVEL: 'warn' },
      appEnv,
    });
    acme = await RawClient.connect(prefix, {
      nats: {
        servers: url,
        user: agentUser('acme'),
        pass: passwords[agentUser('acme')],
        inboxPrefix: `_INBOX.${agentUser('acme')}`,
      },
    });
  }, 240_000);
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.stop()));
    await acme?.close();
    await stack?.stop();
    if (server) await stopProcess(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets the services do all their work with their own users: an agent registers and runs a tool', async () => {
    const up = await acme.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    expect(up.tool.name).toBe('add');
    const r = await acme.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'add', args: { a: 40 } },
      { timeoutMs: 30_000 },
    );
    expect(r).toMatchObject({ status: 'success', func_return: 42 });
    // Async: the executor queues, takes and acknowledges work on its JetStream work queue with its own user.
    const queued = await acme.req(
      'toolplane.v1.tools.execute',
      { org_id: org, tool_name: 'add', args: { a: 1 }, mode: 'async' },
      { timeoutMs: 30_000 },
    );
    expect(queued.status).toBe('queued');
    const rec = await expectEventually(
      async () => {
        const rec = await acme.req(
          'toolplane.v1.executions.get',
          { org_id: org, execution_id: queued.execution_id },
          { timeoutMs: 30_000 },
        );
        if (rec.error || rec.execution.status === 'queued' || rec.execution.status === 'running')
          throw new Error(`not finished yet: ${JSON.stringify(rec.error ?? rec.execution.status)}`);
        return rec;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(rec.result).toMatchObject({ status: 'success', func_return: 3 });
  });

  it('lets every service of the stack do its part of one flow with its own user: secrets, an MCP server through mcp-sync, an async call and its events', async () => {
    // The events the services publish, read as their readers read them (each with that reader's user).
    const seen: Array<{ subject: string; body: any }> = [];
    const readers = await Promise.all([as('executor'), as('mcp-gateway')]);
    const watch = (nc: NatsConnection, subjects: string[]) =>
      subjects.forEach((s) =>
        nc.subscribe(`${prefix}.${s}`, {
          callback: (_e, m) => void seen.push({ subject: s, body: JSON.parse(m.string()) }),
        }),
      );
    watch(readers[0]!, [ExecutionCompleted.subject, ToolCreated.subject]);
    watch(readers[1]!, [McpServerSynced.subject]);
    await Promise.all(readers.map((nc) => nc.flush()));
    const flowOrg = uniqueOrg('np-flow');
    try {
      // credentials: a secret, resolved into the sandbox of a tool run on runner-local (reversed: results are masked).
      expect(
        (
          await acme.req('toolplane.v1.secrets.set', {
            org_id: flowOrg,
            scope: 'sandbox',
            key: 'NP_SECRET',
            value: 'np-secret-value',
          })
        ).error,
      ).toBeUndefined();
      const envTool = pythonTool('np_env', 'import os\nreturn os.environ["NP_SECRET"][::-1]');
      expect(
        (await acme.req('toolplane.v1.tools.upsert', { org_id: flowOrg, tool: { source_code: envTool } })).tool.name,
      ).toBe('np_env');
      expect(
        await acme.req('toolplane.v1.tools.execute', { org_id: flowOrg, tool_name: 'np_env' }, { timeoutMs: 30_000 }),
      ).toMatchObject({ status: 'success', func_return: 'eulav-terces-pn' });
      // mcp-sync: an MCP server added (synced into the registry) and one of its tools called through the executor.
      const mcp = new FakeMcpServer();
      mcp.tools = [echoTool('np_shout', '>> ')];
      fakes.push(await mcp.start());
      const added = await acme.req(
        'toolplane.v1.mcp.servers.add',
        { org_id: flowOrg, server: { name: 'np-mcp', transport: 'streamable_http', url: mcp.url } },
        { timeoutMs: 30_000 },
      );
      expect(added.sync).toMatchObject({ added: 1, complete: true });
      expect(
        await acme.req(
          'toolplane.v1.tools.execute',
          { org_id: flowOrg, tool_name: 'np_shout', args: { text: 'hi' } },
          { timeoutMs: 30_000 },
        ),
      ).toMatchObject({ status: 'success', func_return: '>> hi' });
      // An async call: queued on the executor's work queue, run, and its completion published.
      const queued = await acme.req(
        'toolplane.v1.tools.execute',
        { org_id: flowOrg, tool_name: 'np_env', mode: 'async' },
        { timeoutMs: 30_000 },
      );
      expect(queued.status).toBe('queued');
      await expectEventually(
        () => {
          const kinds = (s: string, pred: (b: any) => boolean) =>
            seen.filter((e) => e.subject === s && pred(e.body)).length;
          expect(
            kinds(ToolCreated.subject, (b) => b.org_id === flowOrg && b.tool_name === 'np_env'),
          ).toBeGreaterThanOrEqual(1);
          expect(
            kinds(McpServerSynced.subject, (b) => b.org_id === flowOrg && b.server_id === added.server.id),
          ).toBeGreaterThanOrEqual(1);
          expect(
            kinds(ExecutionCompleted.subject, (b) => b.org_id === flowOrg && b.execution_id === queued.execution_id),
          ).toBeGreaterThanOrEqual(1);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    } finally {
      await Promise.all(readers.map((nc) => nc.close()));
    }
  });

  it('lets an agent neither subscribe to nor request an internal subject, nor read others’ traffic', async () => {
    const evil = await as(agentUser('evil'));
    try {
      for (const subject of [
        `${prefix}.toolplane.internal.>`,
        `${prefix}.toolplane.internal.v1.runners.local.run`,
        `${prefix}.toolplane.v1.>`,
        `${prefix}.toolplane.v1.events.>`,
        '_INBOX.>',
        `_INBOX.${agentUser('acme')}.>`,
        '_INBOX.executor.>',
        '>',
      ]) {
        expect([subject, await subscriptionRefused(evil, subject)]).toEqual([
          subject,
          expect.stringMatching(/Permissions Violation for Subscription/),
        ]);
      }
      for (const subject of [
        `${prefix}.toolplane.internal.v1.execution-env.resolve`,
        `${prefix}.toolplane.internal.v1.runners.local.run`,
        `${prefix}.toolplane.internal.v1.auth-state.get`,
      ]) {
        const err = await evil.request(subject, '{}', { timeout: 5000 }).then(
          () => undefined,
          (e: Error) => e.message,
        );
        expect([subject, err]).toEqual([subject, expect.stringMatching(/Permissions Violation for Publish/)]);
      }
      // Nor forge an event into the stream other services read.
      const ev = await evil.request(`${prefix}.toolplane.v1.events.tool.deleted`, '{}', { timeout: 5000 }).then(
        () => undefined,
        (e: Error) => e.message,
      );
      expect(ev).toMatch(/Permissions Violation for Publish/);
      // A public request with its own inbox works (and still needs a token).
      const anon = await evil.request(`${prefix}.toolplane.v1.tools.list`, JSON.stringify({ org_id: org }), {
        timeout: 10_000,
      });
      expect(anon.json<any>().error.code).toBe('UNAUTHENTICATED');
    } finally {
      await evil.close();
    }
  });

  it('lets only runner-local take runner calls, and no service read another app’s replies', async () => {
    for (const app of ['executor', 'registry', 'credentials', 'mcp-gateway'] as const) {
      const nc = await as(app);
      try {
        expect(await subscriptionRefused(nc, `${prefix}.toolplane.internal.v1.runners.local.run`)).toMatch(
          /Permissions Violation for Subscription/,
        );
        expect(await subscriptionRefused(nc, '_INBOX.runner-local.>')).toMatch(
          /Permissions Violation for Subscription/,
        );
      } finally {
        await nc.close();
      }
    }
    // And a wrong password gets no connection at all.
    await expect(connect({ servers: url, user: 'runner-local', pass: 'guess' })).rejects.toThrow(
      /Authorization Violation/i,
    );
  });

  it('lets the MCP gateway serve with its own user: its session bucket (written, read by another replica, deleted) and the public requests it sends', async () => {
    await acme.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    await acme.req('toolplane.v1.agents.tools.attach', { org_id: org, agent_id: 'np-agent', tool_names: ['add'] });
    const token = await acme.tokenFor(org);
    const base = (port?: number) => `http://127.0.0.1:${port}`;
    const first = stack.apps.get('mcp-gateway')!;
    const second = await stack.addReplica('mcp-gateway');
    // initialize on the first replica: the session is put in the bucket before the client gets its id.
    const { client, transport } = await mcpClient(agentEndpoint('np-agent', base(first.httpPort)), token);
    const other = new Client({ name: 'np-other', version: '1.0.0' });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['add']);
      expect((await client.callTool({ name: 'add', arguments: { a: 40 } })).content).toEqual([
        { type: 'text', text: '42' },
      ]);
      // The same session on the second replica, which has never seen it: it reads it from the bucket.
      const sessionId = transport.sessionId!;
      await other.connect(
        new StreamableHTTPClientTransport(new URL(agentEndpoint('np-agent', base(second.httpPort))), {
          sessionId,
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      expect((await other.listTools()).tools.map((t) => t.name)).toEqual(['add']);
      // Ended there (a delete in the bucket and a sealed broadcast): the first replica forgets it too.
      const end = await fetch(agentEndpoint('np-agent', base(second.httpPort)), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId },
      });
      expect(end.status).toBe(200);
      await expectEventually(
        async () => {
          const res = await fetch(agentEndpoint('np-agent', base(first.httpPort)), {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'mcp-session-id': sessionId,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
          });
          expect(res.status).toBe(404);
        },
        { timeoutMs: 10_000, intervalMs: 100 },
      );
    } finally {
      await other.close().catch(() => undefined);
      await client.close().catch(() => undefined);
    }
  });

  it('keeps the MCP gateway to what it uses: no runner subject, no other inbox, no forged event, no JetStream but its bucket and its SSE event stream', async () => {
    const nc = await as('mcp-gateway');
    const bucket = streamName(prefix, MCP_SESSIONS_BUCKET);
    try {
      for (const subject of [
        `${prefix}.toolplane.internal.v1.runners.local.run`,
        `${prefix}.toolplane.v1.tools.execute`,
        '_INBOX.executor.>',
        '_INBOX.>',
        `$KV.${bucket}.>`,
      ]) {
        expect([subject, await subscriptionRefused(nc, subject)]).toEqual([
          subject,
          expect.stringMatching(/Permissions Violation for Subscription/),
        ]);
      }
      // A runner request sealed with the gateway's own key: NATS refuses it before any runner could.
      const run = `${prefix}.toolplane.internal.v1.runners.local.run`;
      const sealed = sealerOf('mcp-gateway').sealRequest(run, 'runner-local', new TextEncoder().encode('{}'));
      const h = headers();
      h.set(Headers.SERVICE_SEAL, sealed.header);
      const refusedPublish = (subject: string, data: Uint8Array | string = '{}', opts: { headers?: typeof h } = {}) =>
        nc.request(subject, data, { timeout: 5000, ...opts }).then(
          () => 'answered',
          (e: Error) => e.message,
        );
      expect(await refusedPublish(run, sealed.data, { headers: h })).toMatch(/Permissions Violation for Publish/);
      expect(await refusedPublish(`${prefix}.toolplane.v1.events.tool.deleted`)).toMatch(
        /Permissions Violation for Publish/,
      );
      const events = streamName(prefix, EVENTS_STREAM);
      for (const subject of [
        `$JS.API.STREAM.DELETE.${events}`,
        `$JS.API.STREAM.INFO.${events}`,
        '$JS.API.STREAM.NAMES',
        `$JS.API.STREAM.DELETE.KV_${bucket}`,
        `$JS.API.STREAM.PURGE.KV_${bucket}`,
        `$JS.API.CONSUMER.CREATE.KV_${bucket}`,
        `$KV.${bucket}_OTHER.key`,
      ]) {
        expect([subject, await refusedPublish(subject)]).toEqual([
          subject,
          expect.stringMatching(/Permissions Violation for Publish/),
        ]);
      }
      // Its own bucket's state it may read (the gateway's readiness check).
      const info = (await nc.request(`$JS.API.STREAM.INFO.KV_${bucket}`, '', { timeout: 5000 })).json<any>();
      expect(info.config?.name).toBe(`KV_${bucket}`);
      // Its SSE event stream (created by the gateways at start): appended to and read back as a resume does, never deleted or purged.
      const mcpEvents = streamName(prefix, MCP_EVENTS_STREAM);
      for (const subject of [
        `$JS.API.STREAM.DELETE.${mcpEvents}`,
        `$JS.API.STREAM.PURGE.${mcpEvents}`,
        `$JS.API.CONSUMER.DURABLE.CREATE.${mcpEvents}.x`,
      ]) {
        expect([subject, await refusedPublish(subject)]).toEqual([
          subject,
          expect.stringMatching(/Permissions Violation for Publish/),
        ]);
      }
      const subject = `${prefix}.${mcpStreamSubject('np-digest', '0b6c1f7e-3d2a-4c5b-9e8f-1a2b3c4d5e6f')}`;
      nc.publish(subject, JSON.stringify({ n: 1, requests: [1] }));
      await nc.flush();
      await expectEventually(
        async () =>
          (await (await jetstreamManager(nc)).streams.getMessage(mcpEvents, { last_by_subj: subject }))?.seq !==
          undefined,
        { timeoutMs: 5000 },
      );
      const consumer = await jetstream(nc).consumers.get(mcpEvents, {
        filter_subjects: subject,
        deliver_policy: DeliverPolicy.All,
      });
      const read = await consumer.next({ expires: 5000 });
      expect(read?.json<any>()).toEqual({ n: 1, requests: [1] });
    } finally {
      await nc.close();
    }
  });

  it('refused none of the services’ own traffic in this run (the nats-server log and every service’s output)', () => {
    // The test's own connections carry no name; each service's is named after its app.
    const violations = readFileSync(natsLog, 'utf8')
      .split('\n')
      .filter((l) => /Violation/.test(l) && APP_NAMES.some((app) => l.includes(`:nats.js:${app}"`)));
    expect(violations).toEqual([]);
    for (const [name, app] of stack.apps)
      expect([name, app.output().match(/.{0,200}Permissions Violation.{0,200}/g) ?? []]).toEqual([name, []]);
    // The log is the one the server writes (it did log the refusals this file provoked).
    expect(readFileSync(natsLog, 'utf8')).toMatch(/Publish Violation - User "agent-evil"/);
  });
});
