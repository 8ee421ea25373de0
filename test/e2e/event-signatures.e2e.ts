/**
 * Events are believed only from their owner (issue 29 A), on an open NATS (this stack's: no users):
 * a client with no token publishes forged tool.created, tool.updated (with pip packages),
 * tool.deleted, agent-tools.detached, mcp-server.synced and credentials.changed for another org —
 * as plain JSON, signed by a key that is not the owner's, and genuinely signed by an app that does
 * not own the event. Nothing is built for that org's tool, no cache is dropped, every forgery is
 * counted as dropped (by subject and reason, on the consumers' /metrics); a genuine event re-sent
 * byte for byte with its headers is dropped as a replay. The genuine events keep working: a
 * registry-signed control event is acted on (and the other suites run on genuine ones).
 */
import { connect, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import {
  AgentToolsDetached,
  CredentialsChanged,
  Headers,
  McpServerSynced,
  ToolCreated,
  ToolDeleted,
  ToolUpdated,
  type EventDescriptor,
} from '@toolplane/contracts';
import { EventSigner } from '@toolplane/messaging';
import { eventSigningKey, generateX25519 } from '@toolplane/crypto';
import { expectEventually } from '@toolplane/testing';
import { randomUUID } from 'node:crypto';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { natsUrl } from '../support/env';
import { signedEventHeaders } from '../support/identity';
import { RawClient } from '../support/nats-client';
import { startStack, type RunningApp, type Stack } from '../support/stack';
import { ADD } from '../support/tools';

type Variant = 'unsigned' | 'bad_signature' | 'not_owner';

async function dropped(app: RunningApp, subject: string, reason: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${app.healthPort}/metrics`)).text();
  const m = new RegExp(
    `^toolplane_events_dropped_total\\{subject="${subject.replace(/\./g, '\\.')}",reason="${reason}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return m ? Number(m[1]) : 0;
}

async function metric(app: RunningApp, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${app.healthPort}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

describe('events: only their owner is believed, on an open NATS', () => {
  const prefix = `evsig${Math.random().toString(36).slice(2, 8)}`;
  const victim = uniqueOrg('evsig-victim');
  const control = uniqueOrg('evsig-control');
  let stack: Stack;
  let client: RawClient;
  let outsider: NatsConnection;
  let tool: any;
  const app = (n: 'registry' | 'executor' | 'mcp-sync' | 'credentials' | 'runner-local') => stack.apps.get(n)!;
  const full = (subject: string) => `${prefix}.${subject}`;
  /** A key no app owns (a forger's own Ed25519 key), claiming to be the event's owner. */
  const forgerKey = eventSigningKey(generateX25519().seed).privateKey;

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'runner-local', 'executor', 'mcp-sync'],
    });
    client = await RawClient.connect(prefix);
    // No token, no user: anyone on this NATS.
    outsider = await connect({ servers: natsUrl(), name: 'outsider' });
  }, 180_000);
  afterAll(async () => {
    await outsider?.close();
    await client?.close();
    await stack?.stop();
  });

  const forge = (d: EventDescriptor, body: Record<string, unknown>, variant: Variant) => {
    const data = new TextEncoder().encode(JSON.stringify(body));
    let h: MsgHdrs | undefined;
    if (variant === 'bad_signature')
      new EventSigner(d.publishedBy[0]!, forgerKey).sign((h = natsHeaders()), full(d.subject), randomUUID(), data);
    if (variant === 'not_owner') h = signedEventHeaders('web-tools', full(d.subject), data);
    outsider.publish(full(d.subject), data, h ? { headers: h } : {});
  };

  it('drops forged events of every kind before any handler: nothing built, no cache dropped, each counted', async () => {
    tool = (await client.call('toolplane.v1.tools.upsert', { org_id: victim, tool: { source_code: ADD } }, 60_000))
      .tool;
    await client.call(
      'toolplane.v1.agents.tools.attach',
      { org_id: victim, agent_id: 'agent-1', tool_ids: [tool.id] },
      30_000,
    );
    const definitions = () =>
      client.call(
        'toolplane.v1.agents.tools.definitions',
        { org_id: victim, agent_id: 'agent-1', format: 'openai_chat' },
        30_000,
      );
    const before = await definitions();
    expect(
      await client.req(
        'toolplane.v1.tools.execute',
        { org_id: victim, tool_name: 'add', args: { a: 1 } },
        { timeoutMs: 60_000 },
      ),
    ).toMatchObject({ status: 'success', func_return: 3 });
    const builds = await metric(app('registry'), 'toolplane_registry_definitions_builds_total');
    const invalidations = await metric(app('registry'), 'toolplane_registry_definitions_invalidations_total');

    const now = () => ({ event_id: randomUUID(), occurred_at: new Date().toISOString() });
    const withPackages = { ...tool, pip_requirements: [{ name: 'evil-package', version: '6.6.6' }] };
    const base = { org_id: victim, tool_id: tool.id, tool_name: tool.name };
    const forgeries: Array<[EventDescriptor, () => Record<string, unknown>]> = [
      [ToolCreated, () => ({ ...now(), ...base, tool: withPackages })],
      [ToolUpdated, () => ({ ...now(), ...base, tool: withPackages })],
      [ToolDeleted, () => ({ ...now(), ...base })],
      [
        AgentToolsDetached,
        () => ({
          ...now(),
          org_id: victim,
          agent_id: 'agent-1',
          tools: [{ tool_id: tool.id, tool_name: tool.name }],
          cause: 'request',
        }),
      ],
      [
        McpServerSynced,
        () => ({
          ...now(),
          org_id: victim,
          server_id: `mcp-${randomUUID()}`,
          server_name: 'x',
          trigger: 'manual',
          ok: true,
          report: null,
          error: null,
        }),
      ],
      [CredentialsChanged, () => ({ org_id: victim })],
    ];
    for (const [d, body] of forgeries)
      for (const variant of ['unsigned', 'bad_signature', 'not_owner'] as const) forge(d, body(), variant);
    await outsider.flush();

    // Each counted by its consumers: the registry (tool and agent-tools events), the executor (tool events, credentials.changed), mcp-sync (mcp-server events).
    const consumers: Array<[EventDescriptor, RunningApp]> = [
      ...[ToolUpdated, ToolDeleted, AgentToolsDetached].map(
        (d) => [d, app('registry')] as [EventDescriptor, RunningApp],
      ),
      ...[ToolCreated, ToolUpdated, ToolDeleted, CredentialsChanged].map(
        (d) => [d, app('executor')] as [EventDescriptor, RunningApp],
      ),
      [McpServerSynced, app('mcp-sync')],
    ];
    for (const [d, consumer] of consumers) {
      for (const reason of ['unsigned', 'bad_signature', 'not_owner']) {
        await expectEventually(async () =>
          expect([consumer.name, d.subject, reason, (await dropped(consumer, d.subject, reason)) >= 1]).toEqual([
            consumer.name,
            d.subject,
            reason,
            true,
          ]),
        );
      }
    }

    // A genuine tool.updated with packages (signed by the registry's key) for another org is acted on: the runner starts
    // its build, the registry drops that org's definitions. Published after the forgeries, on the same connection and
    // subject: once it is seen, so were they.
    const controlId = `tool-${randomUUID()}`;
    const controlBody = new TextEncoder().encode(
      JSON.stringify({
        ...now(),
        org_id: control,
        tool_id: controlId,
        tool_name: 'add',
        tool: { ...withPackages, id: controlId },
      }),
    );
    outsider.publish(full(ToolUpdated.subject), controlBody, {
      headers: signedEventHeaders('registry', full(ToolUpdated.subject), controlBody),
    });
    await expectEventually(
      () => expect(app('runner-local').output()).toContain(`for tool ${controlId} of org ${control}`),
      { timeoutMs: 60_000 },
    );
    expect(app('runner-local').output()).not.toContain(`for tool ${tool.id}`);
    await expectEventually(async () =>
      expect(await metric(app('registry'), 'toolplane_registry_definitions_invalidations_total')).toBe(
        invalidations + 1,
      ),
    );

    // No cache dropped: the definitions are served from the same cached set, the tool still runs, nothing was detached.
    expect(await definitions()).toEqual(before);
    expect(await metric(app('registry'), 'toolplane_registry_definitions_builds_total')).toBe(builds);
    expect(await metric(app('registry'), 'toolplane_registry_definitions_invalidations_total')).toBe(invalidations + 1);
    const attached = (
      await client.call('toolplane.v1.agents.tools.list', { org_id: victim, agent_id: 'agent-1' }, 30_000)
    ).tools;
    expect([attached.length, JSON.stringify(attached).includes(tool.id)]).toEqual([1, true]);
    expect(
      await client.req(
        'toolplane.v1.tools.execute',
        { org_id: victim, tool_name: 'add', args: { a: 40 } },
        { timeoutMs: 60_000 },
      ),
    ).toMatchObject({ status: 'success', func_return: 42 });
    for (const a of stack.apps.values()) expect([a.name, a.proc.exitCode]).toEqual([a.name, null]);
  });

  it('drops a genuine event re-sent byte for byte with its headers (a replay)', async () => {
    const seen: Msg[] = [];
    const sub = outsider.subscribe(full(ToolUpdated.subject), { callback: (_e, m) => void seen.push(m) });
    await outsider.flush();
    const replays = await dropped(app('registry'), ToolUpdated.subject, 'replay');
    await client.call(
      'toolplane.v1.tools.upsert',
      { org_id: victim, tool: { source_code: ADD, description: 'Add, again.' } },
      60_000,
    );
    await expectEventually(() => expect(seen.length).toBeGreaterThanOrEqual(1));
    sub.unsubscribe();
    const genuine = seen[0]!;
    expect(genuine.headers?.get(Headers.EVENT_PUBLISHER)).toBe('registry');
    outsider.publish(genuine.subject, genuine.data, { headers: genuine.headers! });
    await outsider.flush();
    await expectEventually(async () =>
      expect(await dropped(app('registry'), ToolUpdated.subject, 'replay')).toBeGreaterThan(replays),
    );
  });
});
