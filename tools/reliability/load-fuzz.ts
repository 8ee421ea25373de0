/**
 * The fuzz soak of `LOAD_FUZZ=1 npm run reliability:load`: the fuzz suite's generators
 * (test/support/fuzz.ts) sent to every public subject, round after round with a new seed each,
 * against the load's stack while the load runs, in an org of their own. Every case must get,
 * within REPLY_BOUND_MS, a reply its contract accepts or a typed error other than INTERNAL.
 */
import fc from 'fast-check';
import {
  judgeReply,
  mutatedSource,
  PUBLIC_REQUEST_SUBJECTS,
  requestsFor,
  validPayloads,
} from '../../test/support/fuzz';
import { RawClient } from '../../test/support/nats-client';
import { Tally } from './load-accounting';

const REPLY_BOUND_MS = 30_000;
/** Cases per subject in each round (a round covers every public subject, then mutated sources). */
const PER_SUBJECT = 5;
const ADD =
  'def add(a: int, b: int = 2) -> int:\n    """Add.\n\n    Args:\n        a (int): A.\n        b (int): B.\n    """\n    return a + b\n';

export interface FuzzFinding {
  subject: string;
  problem: string;
  request: string;
}

export interface FuzzReport {
  seed: number;
  cases: number;
  rounds: number;
  codes: Tally;
  findings: FuzzFinding[];
}

export interface FuzzSoak {
  /** Lets the cases in flight finish, then reports. */
  stop(): Promise<FuzzReport>;
}

export async function startFuzzSoak(prefix: string, org: string, seed: number, concurrency = 4): Promise<FuzzSoak> {
  const client = await RawClient.connect(prefix);
  const add = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } });
  if (add.error) throw new Error(`fuzz setup: ${JSON.stringify(add.error)}`);
  // What the destructive examples delete: a tool and a token of their own.
  const victim = await client.req('toolplane.v1.tools.upsert', {
    org_id: org,
    tool: { source_code: 'def victim() -> int:\n    """Victim."""\n    return 1\n' },
  });
  const token = await client.mint(org, { name: 'fuzz victim', scopes: ['tools:read'] });
  const valid = validPayloads(org, {
    tool: victim.tool.id,
    server: 'mcp-00000000-0000-4000-8000-000000000000',
    token: token.token_id,
  });
  const report: FuzzReport = { seed, cases: 0, rounds: 0, codes: new Tally(), findings: [] };
  let stopping = false;

  const probe = async (subject: string, body: unknown): Promise<void> => {
    const raw = (body as { __raw?: string } | null)?.__raw;
    let reply: unknown;
    report.cases++;
    try {
      reply = await client.req(
        subject,
        raw ?? (typeof body === 'object' && body !== null ? body : JSON.stringify(body)),
        { timeoutMs: REPLY_BOUND_MS },
      );
    } catch (e) {
      // The test client mints a token for the org a case names first; a typed refusal of that (an org
      // an earlier case deleted through auth.orgs.delete) is a typed answer, not a missing reply.
      const refused = /^could not mint a token for .*: ([A-Z_]+) /.exec((e as Error).message)?.[1];
      if (refused) {
        report.codes.add(`${refused} (token mint)`);
        return;
      }
      report.codes.add('NO_REPLY');
      report.findings.push({
        subject,
        problem: `no reply within ${REPLY_BOUND_MS} ms (${(e as Error).message})`,
        request: shown(raw ?? body),
      });
      return;
    }
    const { code, problem } = judgeReply(subject, reply);
    report.codes.add(code);
    if (problem) report.findings.push({ subject, problem, request: shown(raw ?? body) });
  };

  /** One round: PER_SUBJECT generated requests for every public subject, then mutated sources for the schema engine. */
  const casesOf = (round: number): Array<[string, unknown]> => {
    const s = seed + round * 7919;
    const cases: Array<[string, unknown]> = [];
    for (const subject of PUBLIC_REQUEST_SUBJECTS) {
      const salt = [...subject].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);
      for (const body of fc.sample(requestsFor(valid[subject]!), { seed: s + salt, numRuns: PER_SUBJECT }))
        cases.push([subject, body]);
    }
    const python = valid['toolplane.v1.schemas.generate']!.source_code as string;
    for (const source_code of fc.sample(mutatedSource(python), { seed: s, numRuns: PER_SUBJECT }))
      cases.push(['toolplane.v1.schemas.generate', { source_code, source_type: 'python' }]);
    return cases;
  };

  const run = (async () => {
    for (let round = 0; !stopping; round++) {
      const cases = casesOf(round);
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (!stopping && next < cases.length) {
            const [subject, body] = cases[next++]!;
            await probe(subject, body);
          }
        }),
      );
      report.rounds = round + 1;
    }
  })();

  return {
    async stop() {
      stopping = true;
      await run;
      await client.close();
      return report;
    },
  };
}

function shown(v: unknown): string {
  if (typeof v === 'string') return v.slice(0, 300);
  try {
    return (JSON.stringify(v) ?? String(v)).slice(0, 300);
  } catch {
    return '(not serializable: too deep)';
  }
}
