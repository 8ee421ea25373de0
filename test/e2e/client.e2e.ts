/**
 * @toolplane/client against the running stack: every public method once through the typed facade,
 * the error envelope as a typed error, retries only for retryable errors of idempotent calls, and
 * the caller's trace continued.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { API, apiEntries, ClientErrorCode, ToolplaneClient, ToolplaneError } from '@toolplane/client';
import { ErrorEnvelope } from '@toolplane/contracts';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { natsUrl } from '../support/env';
import { validPayloads } from '../support/fuzz';
import { ensureTestIdentity, operatorToken } from '../support/identity';
import { RawClient } from '../support/nats-client';

const ADD =
  'def add(a: int, b: int = 2) -> int:\n    """Add two integers.\n\n    Args:\n        a (int): The first number.\n        b (int): The second number.\n    """\n    return a + b\n';
/** Codes that mean the call never reached its service or came back outside the contract. */
const NOT_SERVED = new Set<string>([
  ClientErrorCode.NO_RESPONDERS,
  ClientErrorCode.REQUEST_TIMEOUT,
  ClientErrorCode.MALFORMED_REPLY,
  ClientErrorCode.CONTRACT_VIOLATION,
  'TRANSPORT_FAILED',
]);

describe('@toolplane/client on the stack', () => {
  const org = uniqueOrg('client');
  let raw: RawClient;
  let nc: NatsConnection;
  let client: ToolplaneClient;

  beforeAll(async () => {
    raw = await RawClient.connect(testPrefix());
    nc = await connect({ servers: natsUrl(), name: 'client-e2e' });
    client = await ToolplaneClient.connect({
      nats: nc,
      prefix: testPrefix(),
      org,
      token: await raw.tokenFor(org),
      events: { keysDir: ensureTestIdentity().keysDir },
    });
  });
  afterAll(async () => {
    await client?.close();
    await nc?.close();
    await raw?.close();
  });

  it('calls every public subject through its typed method and gets a reply that matches the contract or a typed error', async () => {
    await client.tools.upsert({ org_id: org, tool: { source_code: ADD } });
    const victim = await client.tools.upsert({
      org_id: org,
      tool: { source_code: 'def victim() -> int:\n    """Victim."""\n    return 1\n' },
    });
    const operator = client.withToken(operatorToken());
    const token = await operator.auth.tokens.create({ org_id: org, name: 'client victim', scopes: ['tools:read'] });
    const valid = validPayloads(org, {
      tool: victim.tool.id,
      server: 'mcp-00000000-0000-4000-8000-000000000000',
      token: token.token_id,
    });
    const outcomes: Record<string, string> = {};
    for (const subject of Object.keys(valid)) {
      const entry = apiEntries(API).find((e) => e.descriptor.subject === subject);
      expect(entry).toBeDefined();
      const caller = subject.startsWith('toolplane.v1.auth.') ? operator : client;
      const method = entry!.path.reduce((node: any, k) => node[k], caller) as (req: unknown) => Promise<unknown>;
      try {
        await method(valid[subject]);
        outcomes[subject] = 'ok';
      } catch (e) {
        expect(e).toBeInstanceOf(ToolplaneError);
        outcomes[subject] = (e as ToolplaneError).code;
      }
    }
    expect(Object.entries(outcomes).filter(([, code]) => NOT_SERVED.has(code))).toEqual([]);
    expect(Object.keys(outcomes).sort()).toEqual(
      apiEntries(API)
        .map((e) => e.descriptor.subject)
        .sort(),
    );
    expect(outcomes['toolplane.v1.tools.get']).toBe('ok');
    expect(outcomes['toolplane.v1.tools.execute']).toBe('ok');
  });

  it('maps the error envelope to a ToolplaneError with code, message, retryable and trace id', async () => {
    const err = await client.tools.get({ org_id: org, name: 'no_such_tool' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolplaneError);
    expect(err).toMatchObject({ code: 'TOOL_NOT_FOUND', retryable: false, subject: 'toolplane.v1.tools.get' });
    expect((err as ToolplaneError).trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('refuses a request outside the contract before sending it', async () => {
    const err = await client.tools.get({ org_id: org } as never).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ClientErrorCode.CONTRACT_VIOLATION, retryable: false });
  });

  it('continues the caller trace: the service answers in the trace the caller started', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    try {
      const traceId = randomBytes(16).toString('hex');
      const parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId,
        spanId: randomBytes(8).toString('hex'),
        traceFlags: TraceFlags.SAMPLED,
        isRemote: false,
      });
      const err = await context
        .with(parent, () => client.tools.get({ org_id: org, name: 'not_there' }))
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'TOOL_NOT_FOUND', trace_id: traceId });
    } finally {
      context.disable();
      propagation.disable();
    }
  });

  describe('retries', () => {
    // A responder of our own on a private prefix answers with the envelope under test and counts.
    const prefix = `clientretry${randomBytes(4).toString('hex')}`;
    let calls = 0;
    let body = '';
    let fake: ToolplaneClient;

    beforeAll(async () => {
      nc.subscribe(`${prefix}.>`, {
        callback: (_e, m) => {
          calls++;
          m.respond(body);
        },
      });
      await nc.flush();
      fake = await ToolplaneClient.connect({
        nats: nc,
        prefix,
        org,
        token: 't',
        retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
      });
    });
    const answer = (code: string, retryable: boolean) => {
      calls = 0;
      body = JSON.stringify(
        ErrorEnvelope.parse({ error: { code, message: 'm', retryable, trace_id: 'a'.repeat(32) } }),
      );
    };

    it('retries a retryable error of a read up to the attempts, then throws it', async () => {
      answer('SERVICE_UNAVAILABLE', true);
      await expect(fake.tools.get({ org_id: org, name: 'x' })).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        retryable: true,
      });
      expect(calls).toBe(3);
    });

    it('does not retry a non-retryable error', async () => {
      answer('TOOL_NOT_FOUND', false);
      await expect(fake.tools.get({ org_id: org, name: 'x' })).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
      expect(calls).toBe(1);
    });

    it('does not retry writes, nor an execute without an idempotency key; does retry one with a key', async () => {
      answer('SERVICE_UNAVAILABLE', true);
      await expect(fake.tools.upsert({ org_id: org, tool: { source_code: ADD } })).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
      });
      expect(calls).toBe(1);
      answer('SERVICE_UNAVAILABLE', true);
      await expect(fake.tools.execute({ org_id: org, tool_name: 'add', args: {} })).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
      });
      expect(calls).toBe(1);
      answer('SERVICE_UNAVAILABLE', true);
      await expect(
        fake.tools.execute({ org_id: org, tool_name: 'add', args: {}, idempotency_key: 'k1' }),
      ).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(calls).toBe(3);
    });

    it('stops on abort', async () => {
      answer('SERVICE_UNAVAILABLE', true);
      const ac = new AbortController();
      ac.abort();
      await expect(fake.tools.get({ org_id: org, name: 'x' }, { signal: ac.signal })).rejects.toMatchObject({
        code: ClientErrorCode.ABORTED,
      });
      expect(calls).toBe(0);
    });
  });

  it('helpers: pagination, registerPythonFile, definitionsFor, executeBatch, async waitFor, events', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-client-'));
    const ac = new AbortController();
    const events = client.events({ entities: ['tool'], org, signal: ac.signal });
    const firstEvent = events.next();
    for (const n of ['p1', 'p2', 'p3']) {
      writeFileSync(
        join(dir, `${n}.py`),
        `def ${n}(x: int) -> int:\n    """Page tool.\n\n    Args:\n        x (int): X.\n    """\n    return x\n`,
      );
      const tool = await client.registerPythonFile(join(dir, `${n}.py`), { tags: ['paged'] });
      expect(tool.name).toBe(n);
    }
    const names: string[] = [];
    for await (const t of client.paginate(client.tools.list, { org_id: org, tags: ['paged'], limit: 2 }, 'tools'))
      names.push(t.name ?? '');
    expect(names.sort()).toEqual(['p1', 'p2', 'p3']);

    const ev = await firstEvent;
    expect(ev.value).toMatchObject({
      subject: expect.stringMatching(/^toolplane\.v1\.events\.tool\./),
      payload: { org_id: org },
    });
    ac.abort();

    await client.tools.upsert({ org_id: org, tool: { source_code: ADD } });
    await client.agents.tools.attach({ org_id: org, agent_id: 'agent-1', tool_names: ['add'] });
    const defs = await client.definitionsFor('agent-1');
    expect(JSON.stringify(defs)).toContain('add');
    const batch = await client.executeBatch([{ call_id: 'c1', tool_name: 'add', args: { a: 1, b: 2 } }]);
    expect(batch.results[0]).toMatchObject({ call_id: 'c1', status: 'success', func_return: 3 });

    const queued = (await client.tools.execute({
      org_id: org,
      tool_name: 'add',
      args: { a: 2, b: 2 },
      mode: 'async',
    })) as { execution_id: string };
    const done = await client.waitFor(queued.execution_id);
    expect(done.execution.status).toBe('succeeded');
    expect(done.result).toMatchObject({ func_return: 4 });
  });
});
