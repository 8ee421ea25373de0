/**
 * Fuzz: every public subject gets generated requests (mutated valid payloads, arbitrary JSON, raw
 * bytes, NUL / lone surrogates / huge strings / deep nesting) and the schema engine gets mutated
 * tool sources. Every request must get, within a bound, a reply that matches its contract or a
 * typed error other than INTERNAL; afterwards every service is still ready.
 *
 * Also: mutated headers (authorization, traceparent, tracestate, the deadline) on public subjects
 * (mutated events: fuzz-events.e2e.ts, on a stack of its own).
 *
 * Bounded here (FUZZ_RUNS per subject, default 30, seed FUZZ_SEED, default fixed); `npm run fuzz`
 * runs it long with a fresh seed. The seed is printed: FUZZ_SEED=<seed> replays a run.
 */
import fc from 'fast-check';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { ErrorCode, requestDescriptorFor } from '@toolplane/contracts';
import { sharedAppPort, testPrefix, uniqueOrg } from '../support/context';
import { PUBLIC_REQUEST_SUBJECTS, mutatedSource, requestsFor, validPayloads } from '../support/fuzz';
import { RawClient } from '../support/nats-client';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);
const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const REPLY_BOUND_MS = 30_000;
const CONCURRENCY = 4;
const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

interface Finding {
  subject: string;
  problem: string;
  request: string;
}

describe(`fuzz (seed ${SEED}, ${RUNS} runs per subject)`, () => {
  let client: RawClient;
  const org = uniqueOrg('fuzz');
  let valid: ReturnType<typeof validPayloads>;
  const findings: Finding[] = [];
  const stats = new Map<string, Map<string, number>>();

  beforeAll(async () => {
    process.stdout.write(`fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}\n`);
    client = await RawClient.connect(testPrefix());
    const add = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code:
          'def add(a: int, b: int = 2) -> int:\n    """Add.\n\n    Args:\n        a (int): A.\n        b (int): B.\n    """\n    return a + b\n',
      },
    });
    expect(add.tool.name).toBe('add');
    // What the destructive examples delete: a tool and a token of their own, never what the others use.
    const victim = await client.req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: { source_code: 'def victim() -> int:\n    """Victim."""\n    return 1\n' },
    });
    const token = await client.mint(org, { name: 'fuzz victim', scopes: ['tools:read'] });
    valid = validPayloads(org, {
      tool: victim.tool.id,
      server: 'mcp-00000000-0000-4000-8000-000000000000',
      token: token.token_id,
    });
  });
  afterAll(async () => {
    const lines = [...stats].map(
      ([subject, codes]) => `${subject.padEnd(40)} ${[...codes].map(([c, n]) => `${c}:${n}`).join(' ')}`,
    );
    process.stdout.write(`fuzz results (seed ${SEED}):\n${lines.join('\n')}\n`);
    await client?.close();
  });

  /** Sends one generated request; records what came back; returns a problem or undefined. */
  const probe = async (subject: string, body: unknown): Promise<void> => {
    const raw = (body as { __raw?: string } | null)?.__raw;
    const shown = raw ?? safeJson(body);
    let reply: any;
    try {
      reply = await client.req(
        subject,
        raw ?? (typeof body === 'object' && body !== null ? body : JSON.stringify(body)),
        { timeoutMs: REPLY_BOUND_MS },
      );
    } catch (e) {
      findings.push({
        subject,
        problem: `no reply within ${REPLY_BOUND_MS} ms (${(e as Error).message})`,
        request: shown,
      });
      return;
    }
    const code: string = reply?.error?.code ?? 'ok';
    const codes = stats.get(subject) ?? new Map<string, number>();
    codes.set(code, (codes.get(code) ?? 0) + 1);
    stats.set(subject, codes);
    if (reply?.error) {
      if (code === ErrorCode.INTERNAL) findings.push({ subject, problem: 'INTERNAL', request: shown });
      else if (!KNOWN_CODES.has(code))
        findings.push({ subject, problem: `unknown error code ${code}`, request: shown });
      return;
    }
    const ok = requestDescriptorFor(subject)!.reply.safeParse(reply);
    if (!ok.success)
      findings.push({
        subject,
        problem: `reply does not match its contract: ${ok.error.message.slice(0, 300)}`,
        request: shown,
      });
  };

  /** One request with the headers given (no token added): the reply must still be valid or typed. */
  const probeWith = async (subject: string, body: unknown, headers: MsgHdrs, shown: string): Promise<void> => {
    let reply: any;
    try {
      reply = await client.req(subject, body, { timeoutMs: REPLY_BOUND_MS, headers, token: null });
    } catch (e) {
      findings.push({
        subject,
        problem: `[headers] no reply within ${REPLY_BOUND_MS} ms (${(e as Error).message})`,
        request: shown,
      });
      return;
    }
    const code: string = reply?.error?.code ?? 'ok';
    if (code === ErrorCode.INTERNAL) findings.push({ subject, problem: '[headers] INTERNAL', request: shown });
    else if (reply?.error && !KNOWN_CODES.has(code))
      findings.push({ subject, problem: `[headers] unknown error code ${code}`, request: shown });
    else if (!reply?.error && !requestDescriptorFor(subject)!.reply.safeParse(reply).success)
      findings.push({ subject, problem: '[headers] reply does not match its contract', request: shown });
  };

  const runAll = async (subject: string, cases: unknown[]) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < cases.length) await probe(subject, cases[next++]);
      }),
    );
  };

  it('has a valid example payload for every public subject', () => {
    expect(Object.keys(valid).sort()).toEqual([...PUBLIC_REQUEST_SUBJECTS].sort());
  });

  it.each(PUBLIC_REQUEST_SUBJECTS)(
    '%s: a valid reply or a typed error, never INTERNAL, for generated input',
    async (subject) => {
      const seed = SEED + [...subject].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);
      await runAll(subject, fc.sample(requestsFor(valid[subject]!), { seed, numRuns: RUNS }));
      expect(
        findings.filter((f) => f.subject === subject).map((f) => `${f.problem}: ${f.request.slice(0, 500)}`),
      ).toEqual([]);
    },
  );

  it('the schema engine answers mutated Python and TypeScript sources with a schema or a typed error', async () => {
    const python = valid['toolplane.v1.schemas.generate']!.source_code as string;
    const ts =
      '/**\n * Add two numbers.\n * @param a The first number.\n * @param b The second number.\n */\nexport function add(a: number, b = 2): number {\n  return a + b;\n}\n';
    const py = fc
      .sample(mutatedSource(python), { seed: SEED, numRuns: RUNS * 2 })
      .map((source_code) => ({ source_code, source_type: 'python' }));
    const tsc = fc
      .sample(mutatedSource(ts), { seed: SEED + 1, numRuns: RUNS })
      .map((source_code) => ({ source_code, source_type: 'typescript' }));
    await runAll('toolplane.v1.schemas.generate', [...py, ...tsc]);
    const upserts = fc
      .sample(mutatedSource(python), { seed: SEED + 2, numRuns: RUNS })
      .map((source_code) => ({ org_id: org, tool: { source_code } }));
    await runAll('toolplane.v1.tools.upsert', upserts);
    expect(findings.map((f) => `${f.subject} ${f.problem}: ${f.request.slice(0, 500)}`)).toEqual([]);
  });

  it('answers mutated headers (authorization, traceparent, the deadline) with a typed error or a valid reply, never INTERNAL', async () => {
    const subjects = [
      'toolplane.v1.tools.get',
      'toolplane.v1.tools.list',
      'toolplane.v1.tools.execute',
      'toolplane.v1.schemas.validate',
    ];
    const good = await client.tokenFor(org);
    const header = fc.oneof(
      fc.string({ maxLength: 64 }),
      fc.string({ unit: 'binary', maxLength: 64 }),
      fc.constantFrom(
        '',
        ' ',
        'Bearer',
        'Bearer ',
        `Bearer ${good}x`,
        `bearer ${good.slice(0, -2)}`,
        `Basic ${good}`,
        'Bearer a.b.c',
        `Bearer ${'A'.repeat(20_000)}`,
        '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01',
      ),
      fc.constantFrom(
        '-1',
        '0',
        '9'.repeat(40),
        'NaN',
        '1e309',
        '00-0-0-0',
        '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      ),
    );
    const cases = fc.sample(
      fc.tuple(
        fc.constantFrom(...subjects),
        fc.array(
          fc.tuple(
            fc.constantFrom('authorization', 'Authorization', 'traceparent', 'tracestate', 'toolplane-deadline'),
            header,
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.boolean(),
      ),
      { seed: SEED + 7, numRuns: RUNS * 4 },
    );
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < cases.length) {
          const [subject, pairs, withGood] = cases[next++]!;
          const h = natsHeaders();
          if (withGood) h.set('authorization', `Bearer ${good}`);
          const shown = JSON.stringify(pairs.map(([k, v]) => [k, v.slice(0, 80)]));
          try {
            // A value NATS itself cannot carry in a header (CR, LF, NUL…) is refused by the client library: not a case.
            for (const [k, v] of pairs) h.append(k, v);
          } catch {
            continue;
          }
          await probeWith(subject, valid[subject], h, shown);
        }
      }),
    );
    expect(
      findings.filter((f) => f.problem.startsWith('[headers]')).map((f) => `${f.subject} ${f.problem}: ${f.request}`),
    ).toEqual([]);
  });

  it('leaves every service ready', async () => {
    for (const app of ['registry', 'schema', 'credentials', 'executor', 'runner-local', 'mcp-sync']) {
      const r = await fetch(`http://127.0.0.1:${sharedAppPort(app)}/readyz`);
      expect([app, r.status]).toEqual([app, 200]);
    }
  });
});

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return '(not serializable: too deep)';
  }
}
