import { expectEventually } from '@toolplane/testing';
import { sharedAppPort, testDatabaseUrl, testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';
import { ADD } from '../support/tools';

/**
 * Issue 12: one request stalled the schema service for everyone (a trivial schemas.validate
 * waited 5–34 s behind a pathological source, and tools.upsert derives schemas here). The engine
 * now runs in worker threads; these tests prove non-interference by the order of replies, never
 * by a duration.
 */

/**
 * Under 1 KB of TypeScript that the TypeScript parser takes for ever on: its speculative arrow-
 * function parsing doubles with each `async (a) => async (` (20 of them: 4.5 s; here 40), and no
 * check inside the parser can stop it. Only ending its worker does.
 */
const NEVER_ENDS = `/**\n * F.\n * @param x X.\n */\nexport function f(x: string) { return ${'async (a) => async ('.repeat(40)} }\n`;
const args = (entry: string): string =>
  `def f(x: int):\n    """F.\n\n    Args:\n        ${entry}\n        x: X.\n    """\n`;
const SCHEMA = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };

/** Sends every request at once and resolves with the labels in the order their replies came. */
async function replyOrder(
  requests: Record<string, Promise<unknown>>,
): Promise<{ order: string[]; replies: Record<string, any> }> {
  const order: string[] = [];
  const replies: Record<string, any> = {};
  await Promise.all(
    Object.entries(requests).map(([label, p]) =>
      p.then((r) => {
        order.push(label);
        replies[label] = r;
      }),
    ),
  );
  return { order, replies };
}

/**
 * Waits until the shared stack's schema pool has every worker ready and idle: a worker terminated
 * at its limit (by the test before, or another file) is replaced in the background, and a request
 * sent before the replacement is up would wait for it to boot, not for the attacker.
 */
async function poolIdle(): Promise<void> {
  await expectEventually(
    async () => {
      const text = await (await fetch(`http://127.0.0.1:${sharedAppPort('schema')}/metrics`)).text();
      const lines = text.split('\n');
      const ready = Number(lines.find((l) => l.startsWith('toolplane_schema_workers{state="ready"}'))?.split(' ')[1]);
      expect(ready).toBeGreaterThanOrEqual(2);
      expect(lines).toContain('toolplane_schema_workers{state="busy"} 0');
    },
    { timeoutMs: 60_000, intervalMs: 50 },
  );
}

describe('schema service: a pathological request costs only itself', () => {
  let client: RawClient;
  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  it('answers validate, generate and a registry upsert sent after a never-ending generate before it, and that one at its limit', async () => {
    await poolIdle();
    const org = uniqueOrg();
    const never = client.req(
      'toolplane.v1.schemas.generate',
      { source_code: NEVER_ENDS, source_type: 'typescript' },
      { timeoutMs: 60_000 },
    );
    const { order, replies } = await replyOrder({
      never,
      // Another org's requests (an org's own wait their turn behind its own: see the next test).
      validate: client.req('toolplane.v1.schemas.validate', { org_id: org, json_schema: SCHEMA }),
      generate: client.req('toolplane.v1.schemas.generate', { org_id: org, source_code: ADD }),
      upsert: client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }),
    });
    expect(order[order.length - 1]).toBe('never');
    expect(replies.never.error).toMatchObject({
      code: 'SCHEMA_GENERATION_FAILED',
      message: 'Schema generation exceeded its time limit of 2000 ms',
      retryable: false,
      details: { reason: 'TIME_LIMIT_EXCEEDED' },
    });
    expect(replies.validate.health).toBe('NON_STRICT_ONLY');
    expect(replies.generate.json_schema.name).toBe('add');
    expect(replies.upsert.tool.json_schema.name).toBe('add');
  });

  it('keeps a worker for other orgs while one org sends several never-ending sources at once', async () => {
    await poolIdle();
    const attacker = uniqueOrg('schema-attacker');
    const victim = uniqueOrg('schema-victim');
    const never = (n: number) =>
      client.req(
        'toolplane.v1.schemas.generate',
        { org_id: attacker, source_code: NEVER_ENDS.replace('F.', `F${n}.`), source_type: 'typescript' },
        { timeoutMs: 60_000 },
      );
    const first = never(1);
    const second = never(2);
    const { order, replies } = await replyOrder({
      first,
      second,
      victim: client.req('toolplane.v1.schemas.generate', { org_id: victim, source_code: ADD }),
      victim_upsert: client.req('toolplane.v1.tools.upsert', { org_id: victim, tool: { source_code: ADD } }),
    });
    // The attacker holds at most all workers but one: the victim's requests never wait for its limit.
    // (Which of the attacker's two takes the worker first is the service's choice, not the send order.)
    const attackerFirst = Math.min(order.indexOf('first'), order.indexOf('second'));
    expect(order.indexOf('victim')).toBeLessThan(attackerFirst);
    expect(order.indexOf('victim_upsert')).toBeLessThan(attackerFirst);
    expect(replies.victim.json_schema.name).toBe('add');
    expect(replies.victim_upsert.tool.json_schema.name).toBe('add');
    // One of them ran into its limit; the other waited behind it: it got the worker when that one
    // ended (its own limit), or gave up waiting at the limit.
    const reasons = [replies.first, replies.second].map(
      (r) => r.error?.details?.reason ?? r.error?.code ?? JSON.stringify(r),
    );
    expect(reasons).toContain('TIME_LIMIT_EXCEEDED');
    for (const reason of reasons) expect(reason).toMatch(/^(TIME_LIMIT_EXCEEDED|SERVICE_UNAVAILABLE)$/);
  });

  it("answers the fuzz run's pathological Args entries with a typed error, and their in-limit versions with a schema", async () => {
    for (const entry of [`x${' '.repeat(100_000)}: y`, `${'a ('.repeat(40_000)}: y`]) {
      const r = await client.req('toolplane.v1.schemas.generate', { source_code: args(entry) });
      expect(r.error).toMatchObject({
        code: 'SCHEMA_GENERATION_FAILED',
        retryable: false,
        details: { reason: 'SOURCE_TOO_LARGE', function: 'f', line: 1 },
      });
    }
    for (const entry of [`y${' '.repeat(65_000)}: Y.`, `${'a ('.repeat(21_000)}: y`]) {
      const r = await client.req('toolplane.v1.schemas.generate', { source_code: args(entry) });
      expect(r.json_schema.parameters.properties.x).toEqual({ type: 'integer', description: 'X.' });
    }
  });
});

describe('schema service: the time limit ends the work, not the service', () => {
  let stack: Stack;
  let client: RawClient;
  const prefix = `${testPrefix()}s`;

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'credentials'],
      appEnv: { schema: { SCHEMA_TIME_LIMIT_MS: '200', SCHEMA_WORKERS: '2' } },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  const metrics = async (): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${stack.apps.get('schema')!.healthPort}/metrics`);
    return res.text();
  };
  /** Polls /metrics until it holds `line` (the pool replaces a worker in the background). */
  const untilMetric = (line: string): Promise<string> =>
    expectEventually(
      async () => {
        const text = await metrics();
        expect(text.split('\n')).toContain(line);
        return text;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );

  it('answers a request past the limit with TIME_LIMIT_EXCEEDED, terminating and replacing its worker', async () => {
    for (let round = 1; round <= 3; round += 1) {
      const r = await client.req('toolplane.v1.schemas.generate', {
        source_code: NEVER_ENDS,
        source_type: 'typescript',
      });
      expect(r.error).toMatchObject({
        code: 'SCHEMA_GENERATION_FAILED',
        message: 'Schema generation exceeded its time limit of 200 ms',
        retryable: false,
        details: { reason: 'TIME_LIMIT_EXCEEDED' },
      });
      const text = await untilMetric('toolplane_schema_workers{state="ready"} 2');
      expect(text.split('\n')).toEqual(
        expect.arrayContaining([
          'toolplane_schema_workers{state="ready"} 2',
          `toolplane_schema_worker_replacements_total{cause="timeout"} ${round}`,
        ]),
      );
    }
  });
});
