/**
 * `npm run bench:definitions`: toolplane.v1.agents.tools.definitions through the public NATS path
 * (a raw NATS client with an org token, as an agent runtime sends it), on its own stack (registry,
 * schema, credentials; fresh database and prefix), beside a baseline of the same run: tools.get of
 * one tool (the public path itself: edge check, handler, reply).
 *
 * - warm: 10 and 50 tools (openai_chat; 50 also strict, gemini, and an if_none_match answered
 *   not_modified) — the cache hit;
 * - after invalidation: each sample is the first definitions request after a write that dropped
 *   the set — a detach + attach of one tool (the agent's sets) or an update of one tool's
 *   description (the org's sets); the write itself is not timed.
 *
 * BENCH_N warm samples per case (default 2000), BENCH_N_COLD after-invalidation samples (default 200).
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { HEADER, measure, row, summarize, type Summary } from './stats';

const N = Number(process.env.BENCH_N ?? 2000);
const N_COLD = Number(process.env.BENCH_N_COLD ?? 200);
const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

/** A typical tool: four documented parameters, one optional enum (strict-able). */
function toolInput(i: number) {
  const name = `bench_tool_${i}`;
  return {
    name,
    source_code: `def ${name}(query: str, limit: int, region: str, units: str = "metric") -> str:\n    """Tool ${i}."""\n    return query\n`,
    description: `Look up records of kind ${i} matching a query, with paging and units.`,
    json_schema: {
      name,
      description: `Look up records of kind ${i} matching a query, with paging and units.`,
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'What to look for, in plain words.' },
          limit: { type: 'integer', description: 'How many records at most.', minimum: 1, maximum: 100 },
          region: { type: 'string', description: 'The region code, e.g. eu-west.' },
          units: {
            type: 'string',
            enum: ['metric', 'imperial'],
            description: 'Units of the figures.',
            default: 'metric',
          },
        },
        required: ['query', 'limit', 'region'],
      },
    },
  };
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['registry', 'schema', 'credentials'],
    env: { LOG_LEVEL: 'warn' },
  });
  const client = await RawClient.connect(prefix);
  const org = `bench-${id}`;
  const call = async (subject: string, body: Record<string, unknown>) => {
    const r = await client.req(subject, { org_id: org, ...body });
    if (r?.error) throw new Error(`${subject}: ${JSON.stringify(r.error)}`);
    return r;
  };
  try {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((await call('toolplane.v1.tools.upsert', { tool: toolInput(i) })).tool.id);
    await call('toolplane.v1.agents.tools.attach', { agent_id: 'agent-10', tool_ids: ids.slice(0, 10) });
    await call('toolplane.v1.agents.tools.attach', { agent_id: 'agent-50', tool_ids: ids });
    const definitions =
      (agent: string, extra: Record<string, unknown> = {}) =>
      () =>
        call('toolplane.v1.agents.tools.definitions', { agent_id: agent, format: 'openai_chat', ...extra }).then(
          () => undefined,
        );
    const sizes = await Promise.all(
      ['agent-10', 'agent-50'].map(
        async (a) =>
          JSON.stringify(await call('toolplane.v1.agents.tools.definitions', { agent_id: a, format: 'openai_chat' }))
            .length,
      ),
    );
    const etag = (await call('toolplane.v1.agents.tools.definitions', { agent_id: 'agent-50', format: 'openai_chat' }))
      .etag as string;
    const get = () => call('toolplane.v1.tools.get', { id: ids[0] }).then(() => undefined);
    // Warm-up: JIT, token cache, every set built once.
    for (let i = 0; i < 300; i++)
      await Promise.all([
        get(),
        definitions('agent-10')(),
        definitions('agent-50')(),
        definitions('agent-50', { strict: true })(),
        definitions('agent-50', { format: 'gemini' })(),
      ]);

    out(`Toolplane definitions benchmark (${new Date().toISOString()}): public NATS path, concurrency 1`);
    out(`reply sizes: 10 tools ${sizes[0]} bytes, 50 tools ${sizes[1]} bytes (openai_chat)\n`);
    out(HEADER);
    const rows: Array<[string, Summary]> = [];
    const add = async (label: string, s: Promise<Summary>) => {
      const v = await s;
      rows.push([label, v]);
      out(row(label, v));
    };
    await add('baseline: tools.get (1 tool)', measure(N, 1, get));
    await add('warm, 10 tools', measure(N, 1, definitions('agent-10')));
    await add('warm, 50 tools', measure(N, 1, definitions('agent-50')));
    await add('warm, 50 tools, strict', measure(N, 1, definitions('agent-50', { strict: true })));
    await add('warm, 50 tools, gemini', measure(N, 1, definitions('agent-50', { format: 'gemini' })));
    await add(
      'warm, 50 tools, if_none_match (not_modified)',
      measure(N, 1, definitions('agent-50', { if_none_match: etag })),
    );

    // After invalidation: time only the first read after each write.
    const afterWrite = async (agent: string, write: (i: number) => Promise<unknown>): Promise<Summary> => {
      const samples: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < N_COLD; i++) {
        await write(i);
        const t = performance.now();
        await definitions(agent)();
        samples.push(performance.now() - t);
      }
      return summarize(samples, performance.now() - t0);
    };
    const reattach = (agent: string, tool: string) => async () => {
      await call('toolplane.v1.agents.tools.detach', { agent_id: agent, tool_ids: [tool] });
      await call('toolplane.v1.agents.tools.attach', { agent_id: agent, tool_ids: [tool] });
    };
    const r10 = reattach('agent-10', ids[0]!);
    const r50 = reattach('agent-50', ids[0]!);
    await add('after detach+attach, 10 tools', afterWrite('agent-10', r10));
    await add('after detach+attach, 50 tools', afterWrite('agent-50', r50));
    const update = (i: number) =>
      call('toolplane.v1.tools.upsert', { tool: { ...toolInput(1), description: `Revision ${i} of tool 1.` } });
    await add('after a tool update, 50 tools', afterWrite('agent-50', update));
    const warm50 = rows.find(([l]) => l === 'warm, 50 tools')![1];
    const base = rows[0]![1];
    out(
      `\nwarm 50-tool set: p50 ${warm50.p50.toFixed(3)} ms (${(warm50.p50 - base.p50).toFixed(3)} ms over the tools.get baseline), target p50 ≤ 1 ms: ${warm50.p50 <= 1 ? 'met' : 'NOT met'}`,
    );
  } finally {
    await client.close();
    await stack.stop();
    await dropDatabase(db);
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
