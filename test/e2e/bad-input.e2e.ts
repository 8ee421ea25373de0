import { jetstreamManager } from '@nats-io/jetstream';
import { Client } from 'pg';
import { ErrorCode } from '@toolplane/contracts';
import { ToolsUpsert, ToolplaneError } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { eventsOf, sealerOf } from '../support/identity';
import { MessagingClient } from '@toolplane/messaging';
import { testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';
import { ADD } from '../support/tools';

describe('bad input gets a typed error and changes nothing', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  it('answers MALFORMED_MESSAGE to a body that is not JSON', async () => {
    const r = await client.req('toolplane.v1.tools.upsert', '{"org_id": "a", tool: nope');
    expect(r.error).toMatchObject({ code: 'MALFORMED_MESSAGE', retryable: false });
    expect(r.error.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('answers CONTRACT_VIOLATION, naming each field, to a payload of the wrong shape', async () => {
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: 'acme',
      tool: { source_code: 5, surprise: true },
    });
    expect(r.error.code).toBe('CONTRACT_VIOLATION');
    const paths = r.error.details.issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['tool.source_code', 'tool']));
  });

  it('answers CONTRACT_VIOLATION when org_id is missing, on every public subject', async () => {
    for (const subject of [
      'toolplane.v1.tools.upsert',
      'toolplane.v1.tools.get',
      'toolplane.v1.tools.list',
      'toolplane.v1.tools.delete',
      'toolplane.v1.tools.execute',
    ]) {
      const r = await client.req(subject, {
        name: 'x',
        tool_name: 'x',
        id: 'tool-00000000-0000-0000-0000-000000000000',
        tool: { source_code: ADD },
      });
      expect(r.error.code).toBe('CONTRACT_VIOLATION');
      expect(r.error.details.issues.some((i: { path: string }) => i.path === 'org_id')).toBe(true);
    }
  });

  it('refuses a 2 MB payload before it leaves the client, with PAYLOAD_TOO_LARGE', async () => {
    const messaging = new MessagingClient(client.nc, testPrefix(), sealerOf('registry'), eventsOf('registry'));
    const big = `# ${'x'.repeat(2 * 1024 * 1024)}\n${ADD}`;
    const err = await messaging
      .request(ToolsUpsert, { org_id: 'acme', tool: { source_code: big } }, { timeoutMs: 5000 })
      .catch((e: unknown) => e);
    // The contract's source limit catches it first; a raw oversize body is refused by size.
    expect(err).toBeInstanceOf(ToolplaneError);
    expect([ErrorCode.CONTRACT_VIOLATION, ErrorCode.PAYLOAD_TOO_LARGE]).toContain((err as ToolplaneError).code);
    await expect(
      client.req('toolplane.v1.tools.upsert', JSON.stringify({ org_id: 'acme', tool: { source_code: big } })),
    ).rejects.toThrow(/payload/i);
  });

  it('answers PAYLOAD_TOO_LARGE (not a dropped reply) when a reply would not fit on the bus', async () => {
    // 21 KB of schema whose refs inline to 1.2 MB.
    const properties = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`p${i}`, { $ref: '#/$defs/D' }]));
    const r = await client.req('toolplane.v1.schemas.normalize', {
      json_schema: { type: 'object', properties, $defs: { D: { type: 'string', description: 'x'.repeat(20_000) } } },
    });
    expect(r.error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      retryable: false,
      details: { limit: expect.any(Number), bytes: expect.any(Number) },
    });
    expect(r.error.details.bytes).toBeGreaterThan(r.error.details.limit);
  });

  it('refuses source over the size limit with CONTRACT_VIOLATION and stores nothing', async () => {
    const org = uniqueOrg();
    const r = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: `${ADD}\n# ${'y'.repeat(300 * 1024)}` },
    });
    expect(r.error.code).toBe('CONTRACT_VIOLATION');
    expect((await client.req('toolplane.v1.tools.list', { org_id: org })).tools).toEqual([]);
  });
});

describe('a service limit and a missing runner', () => {
  let stack: Stack;
  let client: RawClient;
  const prefix = `${testPrefix()}x`;

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'executor'],
      appEnv: { schema: { MAX_REQUEST_BYTES: '65536' } },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  it('answers PAYLOAD_TOO_LARGE when a request exceeds the service limit', async () => {
    const r = await client.req('toolplane.v1.schemas.generate', { source_code: `${ADD}\n# ${'z'.repeat(100_000)}` });
    expect(r.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', retryable: false });
  });

  it('answers RUNNER_UNAVAILABLE at once when no runner is running', async () => {
    const org = uniqueOrg();
    const up = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    expect(up.tool.name).toBe('add');
    // No responders is answered at once: waiting out the call's timeout would give REQUEST_TIMEOUT instead.
    const r = await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'add', args: { a: 1 } });
    expect(r.error).toMatchObject({ code: 'RUNNER_UNAVAILABLE', retryable: true });
  });

  // Last in this block: it removes the stack's event stream.
  it('keeps a change whose event cannot be published yet, and publishes the event once JetStream can take it', async () => {
    const org = uniqueOrg();
    const jsm = await jetstreamManager(client.nc);
    const stream = `${prefix}_TOOLPLANE_EVENTS`;
    await jsm.streams.delete(stream);
    const r = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
    expect(r.error).toBeUndefined();
    expect(
      (await client.req('toolplane.v1.tools.list', { org_id: org })).tools.map((t: { id: string }) => t.id),
    ).toEqual([r.tool.id]);

    // The outbox relay re-creates the stream and publishes the event, once.
    const eventsOf = async (): Promise<Array<{ subject: string; tool_id: string }>> => {
      const info = await jsm.streams.info(stream).catch(() => null);
      if (!info) return [];
      const found: Array<{ subject: string; tool_id: string }> = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        const p = m?.json<{ org_id: string; tool_id: string }>();
        if (m && p?.org_id === org) found.push({ subject: m.subject.split('.').pop()!, tool_id: p.tool_id });
      }
      return found;
    };
    await expectEventually(async () => expect(await eventsOf()).toEqual([{ subject: 'created', tool_id: r.tool.id }]), {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    const pg = new Client({ connectionString: testDatabaseUrl() });
    await pg.connect();
    try {
      const { rows } = await pg.query('SELECT count(*)::int AS n FROM registry.event_outbox WHERE org_id = $1', [org]);
      expect(rows[0].n).toBe(0);
    } finally {
      await pg.end();
    }
  });
});

describe('text that cannot be stored and values nested too deep get CONTRACT_VIOLATION naming the field (never INTERNAL)', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  const NUL = 'a\u0000b';
  const LONE = 'a\ud800b';
  const refused = (r: any, path: string, what: RegExp) => {
    expect(r.error).toMatchObject({ code: 'CONTRACT_VIOLATION', retryable: false });
    expect(r.error.details.issues).toEqual([expect.objectContaining({ path, message: expect.stringMatching(what) })]);
  };

  it('on every field the fuzz run found reaching Postgres, and stores nothing', async () => {
    const org = uniqueOrg('nul');
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['toolplane.v1.tools.get', { org_id: org, name: NUL }, 'name', /NUL/],
      ['toolplane.v1.tools.list', { org_id: org, tags: ['ok', NUL] }, 'tags.1', /NUL/],
      [
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD, description: NUL } },
        'tool.description',
        /NUL/,
      ],
      ['toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD, tags: [NUL] } }, 'tool.tags.0', /NUL/],
      [
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD, metadata_: { k: { deep: NUL } } } },
        'tool.metadata_.k.deep',
        /NUL/,
      ],
      [
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD, metadata_: { [NUL]: 1 } } },
        `tool.metadata_.${NUL}`,
        /key .*NUL/,
      ],
      [
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD, project_id: NUL } },
        'tool.project_id',
        /NUL/,
      ],
      [
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD, metadata_: { k: LONE } } },
        'tool.metadata_.k',
        /lone UTF-16 surrogate/,
      ],
      ['toolplane.v1.tools.execute', { org_id: org, tool_name: NUL, args: {} }, 'tool_name', /NUL/],
      ['toolplane.v1.tools.execute', { org_id: org, tool_name: 'add', agent_id: NUL, args: {} }, 'agent_id', /NUL/],
      ['toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'K', value: NUL }, 'value', /NUL/],
      [
        'toolplane.v1.secrets.set',
        { org_id: org, scope: 'sandbox', key: 'K', value: 'v', description: LONE },
        'description',
        /surrogate/,
      ],
      [
        'toolplane.v1.sandbox-configs.upsert',
        { org_id: org, provider: 'local', config: { template: NUL } },
        'config.template',
        /NUL/,
      ],
      [
        'toolplane.v1.sandbox-configs.upsert',
        { org_id: org, provider: 'local', config: { template: LONE } },
        'config.template',
        /surrogate/,
      ],
    ];
    for (const [subject, body, path, what] of cases) refused(await client.req(subject, body), path, what);
    expect((await client.req('toolplane.v1.tools.list', { org_id: org })).tools).toEqual([]);
    expect((await client.req('toolplane.v1.secrets.list', { org_id: org })).secrets).toEqual([]);
    expect((await client.req('toolplane.v1.sandbox-configs.list', { org_id: org })).sandbox_configs).toEqual([]);
  });

  it('passes tool arguments through as they are (never stored as text), NUL included, but bounds their nesting', async () => {
    const org = uniqueOrg('args');
    const echo =
      'def echo(text: str) -> str:\n    """Echo.\n\n    Args:\n        text (str): Text.\n    """\n    return text\n';
    expect(
      (await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: echo } })).tool.name,
    ).toBe('echo');
    const r = await client.req('toolplane.v1.tools.execute', {
      org_id: org,
      tool_name: 'echo',
      args: { text: 'x\u0000y' },
    });
    expect(r).toMatchObject({ status: 'success', func_return: 'x\u0000y' });
    // 10,000 levels, written as text (even JSON.stringify would overflow on it).
    const deep = `${'['.repeat(10_000)}"bottom"${']'.repeat(10_000)}`;
    const execute = `{"org_id":${JSON.stringify(org)},"tool_name":"echo","args":{"text":${deep}}}`;
    refused(
      await client.req('toolplane.v1.tools.execute', execute),
      `args.text${'.0'.repeat(62)}`,
      /nested deeper than 64/,
    );
    const upsert = `{"org_id":${JSON.stringify(org)},"tool":{"source_code":${JSON.stringify(echo)},"metadata_":{"d":${deep}}}}`;
    refused(
      await client.req('toolplane.v1.tools.upsert', upsert),
      `tool.metadata_.d${'.0'.repeat(61)}`,
      /nested deeper/,
    );
  });
});
