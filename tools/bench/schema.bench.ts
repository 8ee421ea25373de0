/**
 * `npm run bench:schema`: schema generation, in four parts, each beside a baseline of the same run.
 *
 * 1. The engine in-process: small / typical / large Python and TypeScript tools, p50 and mean per
 *    call, against a bare parse of the same source (tree-sitter / createSourceFile).
 * 2. Pathological sources (issue 12), each in a throwaway worker thread capped at
 *    BENCH_CAP_S (default 60) seconds: time and outcome, beside the typical source.
 * 3. The schema service over NATS (its own stack: schema + credentials, fresh database and
 *    prefix): typical generate and idle validate p50, the issue's source end to end, and the
 *    latency of schemas.validate sent while a long generate is in flight.
 * 4. The worker pool's round trip: typical generate and validate inline vs through the pool.
 *
 * Parts 2 and 3 use only the wire API and the engine's createSchemaEngine/generate, so this file
 * also measures an older build (copy it there): that is how the before/after figures are made.
 *
 *   npm run bench:schema     (BENCH_N calls per service case, default 300; BENCH_PARTS=34 runs parts 3 and 4)
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { createSchemaEngine } from '@toolplane/schema-engine';
import * as ts from 'typescript';
import { Language, Parser } from 'web-tree-sitter';
import { createDatabase, dropDatabase } from '../../test/support/database';
import { databaseUrlFor } from '../../test/support/env';
import { RawClient } from '../../test/support/nats-client';
import { startStack } from '../../test/support/stack';
import { HEADER, measure, row, summarize } from './stats';

const N = Number(process.env.BENCH_N ?? 300);
/** Which parts to run, e.g. BENCH_PARTS=34 (default all). */
const PARTS = process.env.BENCH_PARTS ?? '1234';
const CAP_S = Number(process.env.BENCH_CAP_S ?? 60);
const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

const SMALL = `def roll_d20() -> str:
    """Simulate the roll of a 20-sided die (d20)."""
    import random
    return str(random.randint(1, 20))
`;

const TYPICAL = `from typing import List, Optional, Literal
from pydantic import BaseModel, Field

class Traveller(BaseModel):
    """Who travels."""
    name: str = Field(..., description="Full name.")
    age: Optional[int] = Field(None, ge=0, description="Age in years.")

def search_flights(origin: str, destination: str, date: str, passengers: list[Traveller],
                   cabin: Literal["economy", "business"] = "economy") -> List[dict]:
    """Search flights between two airports.

    Returns matching flights sorted by price.

    Args:
        origin (str): IATA code of the departure airport.
        destination (str): IATA code of the arrival airport.
        date (str): Departure date, YYYY-MM-DD.
        passengers: The travellers.
        cabin: Cabin class.

    Returns:
        List[dict]: The flights.
    """
    return []
`;

function large(): string {
  const helpers = Array.from(
    { length: 100 },
    (_, i) => `def helper_${i}(x):\n    return [x, ${i}, {"k": (x, ${i})}]\n`,
  ).join('\n');
  const names = Array.from({ length: 200 }, (_, i) => `p${i}`);
  const model = `class Item(BaseModel):\n    """An item."""\n    name: str = Field(..., description="Name.")\n    tags: list[str] = Field(default_factory=list, description="Tags.")\n`;
  const params = names
    .map((n, i) => (i % 4 === 0 ? `${n}: Optional[list[Item]] = None` : `${n}: int = ${i}`))
    .join(', ');
  const args = names.map((n) => `        ${n}: Parameter ${n}, described\n            over two lines.`).join('\n');
  return `${helpers}\n${model}\ndef big(${params}):\n    """A big tool.\n\n    Args:\n${args}\n    """\n    return None\n`;
}

const TS_SMALL = `/** Simulate the roll of a 20-sided die (d20). */
export function rollD20(): string {
  return String(Math.floor(Math.random() * 20) + 1);
}
`;

const TS_TYPICAL = `/** Who travels. */
interface Traveller {
  /** Full name. */
  name: string;
  /** Age in years. */
  age?: number | null;
}

/**
 * Search flights between two airports.
 *
 * Returns matching flights sorted by price.
 * @param origin IATA code of the departure airport.
 * @param destination IATA code of the arrival airport.
 * @param date Departure date, YYYY-MM-DD.
 * @param passengers The travellers.
 * @param cabin Cabin class.
 */
export async function searchFlights(origin: string, destination: string, date: string, passengers: Traveller[], cabin: 'economy' | 'business' = 'economy'): Promise<unknown[]> {
  return [];
}
`;

function tsLarge(): string {
  const helpers = Array.from(
    { length: 100 },
    (_, i) => `function helper${i}(x: number) {\n  return [x, ${i}, { k: [x, ${i}] }];\n}\n`,
  ).join('\n');
  const names = Array.from({ length: 200 }, (_, i) => `p${i}`);
  const model = `/** An item. */\ninterface Item {\n  /** Name. */\n  name: string;\n  /** Tags. */\n  tags?: string[];\n}\n`;
  const params = names.map((n, i) => (i % 4 === 0 ? `${n}: Item[] | null = null` : `${n}: number = ${i}`)).join(', ');
  const docs = names.map((n) => ` * @param ${n} Parameter ${n}, described\n *   over two lines.`).join('\n');
  return `${helpers}\n${model}\n/**\n * A big tool.\n${docs}\n */\nexport function big(${params}) {\n  return null;\n}\n`;
}

// Issue 12's fuzzed sources and the other super-linear shapes found auditing the engine.
const argsEntry = (entry: string): string =>
  `def f(x: int):\n    """F.\n\n    Args:\n        ${entry}\n        x: X.\n    """\n`;
const doc = (params: string[]): string =>
  `    """F.\n\n    Args:\n${params.map((p) => `        ${p}: X.`).join('\n')}\n    """\n`;
const PATHOLOGICAL: Array<[string, 'python' | 'typescript', string]> = [
  ['Args: x + 100 000 spaces + ": y"', 'python', argsEntry(`x${' '.repeat(100_000)}: y`)],
  ['Args: 40 000 x "a (" + ": y"', 'python', argsEntry(`${'a ('.repeat(40_000)}: y`)],
  ['Args: x + 60 000 spaces (in limits)', 'python', argsEntry(`y${' '.repeat(60_000)}: Y.`)],
  [
    'Enum of 2 000, Literal of 2 000 uses',
    'python',
    `from enum import Enum\nfrom typing import Literal\nclass E(Enum):\n${Array.from({ length: 2000 }, (_, i) => `    M${i} = ${i}`).join('\n')}\ndef f(x: Literal[${'E.M0, '.repeat(2000)}]):\n${doc(['x'])}`,
  ],
  [
    'models of models, 3 uses x 11 levels',
    'python',
    `from pydantic import BaseModel, Field\nclass M0(BaseModel):\n    a: int = Field(description="a")\n${Array.from({ length: 11 }, (_, i) => `class M${i + 1}(BaseModel):\n    a: M${i} = Field(description="a")\n    b: M${i} = Field(description="b")\n    c: M${i} = Field(description="c")\n`).join('')}def f(x: M11):\n${doc(['x'])}`,
  ],
  [
    'TS enum of 8 000, 8 000 member uses',
    'typescript',
    `enum E {${Array.from({ length: 8000 }, (_, i) => `M${i}`).join(', ')}}\n/**\n * F.\n * @param x X.\n */\nexport function f(x: ${Array.from({ length: 8000 }, (_, i) => `E.M${i}`).join(' | ')}) {}\n`,
  ],
  [
    'TS type T(n) = [T(n-1) x 3], n = 10',
    'typescript',
    `type T0 = string;\n${Array.from({ length: 10 }, (_, i) => `type T${i + 1} = [T${i}, T${i}, T${i}];`).join('\n')}\n/**\n * F.\n * @param x X.\n */\nexport function f(x: T10) {}\n`,
  ],
];

/** TypeScript's parser doubles its time with each `async (a) => async (` (speculative arrow parsing); nothing inside it checks a deadline. */
const tsBomb = (n: number): string =>
  `/**\n * F.\n * @param x X.\n */\nexport function f(x: string) { return ${'async (a) => async ('.repeat(n)} }\n`;
for (const n of [16, 18, 20]) PATHOLOGICAL.push([`TS: ${n} x "async (a) => async ("`, 'typescript', tsBomb(n)]);

/** The costliest kind of source the engine accepts: a 50 000-member Union in ~250 KB. */
const HEAVY = `from typing import Union\ndef heavy(x: Union[${Array.from({ length: 50_000 }, (_, i) => (i % 2 ? 'int' : 'str')).join(', ')}]):\n${doc(['x'])}`;

function time(iterations: number, fn: () => void): { p50: number; mean: number } {
  for (let i = 0; i < Math.min(500, iterations); i += 1) fn(); // warm-up (the TypeScript parser needs more than tree-sitter)
  const samples: number[] = [];
  const start = performance.now();
  for (let i = 0; i < iterations; i += 1) {
    const t = performance.now();
    fn();
    samples.push((performance.now() - t) * 1000);
  }
  const mean = ((performance.now() - start) * 1000) / iterations;
  return { p50: summarize(samples, 1).p50, mean };
}

async function engineInProcess(): Promise<void> {
  const engine = await createSchemaEngine();
  await Parser.init();
  const wasm = join(dirname(require.resolve('tree-sitter-python/package.json')), 'tree-sitter-python.wasm');
  const parser = new Parser().setLanguage(await Language.load(readFileSync(wasm)));
  const cases: Array<[string, 'python' | 'typescript', string, number]> = [
    ['py small', 'python', SMALL, 5000],
    ['py typical (5 params)', 'python', TYPICAL, 2000],
    ['py large (200 params)', 'python', large(), 100],
    ['ts small', 'typescript', TS_SMALL, 5000],
    ['ts typical (5 params)', 'typescript', TS_TYPICAL, 2000],
    ['ts large (200 params)', 'typescript', tsLarge(), 100],
  ];
  const parseOnly = (language: string, source: string): void => {
    if (language === 'python') parser.parse(source)?.delete();
    else ts.createSourceFile('tool.ts', source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  };
  out('1. engine in-process (µs per call)');
  out(
    `${'case'.padEnd(24)}${'bytes'.padStart(8)}${'gen p50'.padStart(10)}${'gen mean'.padStart(10)}${'parse p50'.padStart(11)}${'overhead'.padStart(10)}`,
  );
  for (const [name, language, source, iterations] of cases) {
    const generate = time(iterations, () => engine.generate({ source_code: source, source_type: language }));
    const parse = time(iterations, () => parseOnly(language, source));
    const cells = [generate.p50, generate.mean, parse.p50]
      .map((v, i) => v.toFixed(1).padStart(i === 2 ? 11 : 10))
      .join('');
    out(
      `${name.padEnd(24)}${String(Buffer.byteLength(source)).padStart(8)}${cells}${`${(generate.p50 / parse.p50).toFixed(2)}x`.padStart(10)}`,
    );
  }
  const strictInput = engine.generate({ source_code: TS_TYPICAL, source_type: 'typescript' }).json_schema;
  out(
    `${'strictify (typical)'.padEnd(24)}${''.padStart(8)}${time(5000, () => engine.toStrict(strictInput))
      .p50.toFixed(1)
      .padStart(10)}`,
  );
  parser.delete();
}

/** Generates `source` in a fresh worker thread, ended after CAP_S: [ms, outcome]. */
function generateCapped(source: string, sourceType: string): Promise<[number, string]> {
  const engineIndex = join(__dirname, '..', '..', 'libs', 'schema-engine', 'src', 'index.js'); // this build's engine, in dist
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { createSchemaEngine } = require(workerData.engineIndex);
    createSchemaEngine({ timeLimitMs: 1e9 }).then((engine) => {
      const t = performance.now();
      let outcome;
      try {
        const r = engine.generate({ source_code: workerData.source, source_type: workerData.sourceType });
        outcome = 'schema, ' + Buffer.byteLength(JSON.stringify(r.json_schema)) + ' bytes';
      } catch (e) {
        outcome = e.reason ? e.reason : 'threw ' + e.message;
      }
      parentPort.postMessage([performance.now() - t, outcome]);
    });`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { engineIndex, source, sourceType } });
    const cap = setTimeout(() => {
      void worker.terminate();
      resolve([CAP_S * 1000, `still running at ${CAP_S} s (stopped)`]);
    }, CAP_S * 1000);
    worker.once('message', (m: [number, string]) => {
      clearTimeout(cap);
      void worker.terminate();
      resolve(m);
    });
    worker.once('error', reject);
  });
}

async function pathological(): Promise<void> {
  out(`\n2. pathological sources, engine in a worker thread (capped at ${CAP_S} s)`);
  out(`${'source'.padEnd(40)}${'bytes'.padStart(8)}${'ms'.padStart(10)}  outcome`);
  for (const [name, sourceType, source] of [['typical (baseline)', 'python', TYPICAL] as const, ...PATHOLOGICAL]) {
    const [ms, outcome] = await generateCapped(source, sourceType);
    out(`${name.padEnd(40)}${String(Buffer.byteLength(source)).padStart(8)}${ms.toFixed(1).padStart(10)}  ${outcome}`);
  }
}

/**
 * Validates back to back, from another org, while `long` is in flight: the long request's own
 * time and the validates' latencies. (An org's own requests take their turn behind its own:
 * SCHEMA_WORKERS_PER_ORG.) A validate not answered within 60 s ends the measurement (an old build
 * serving a source that never ends).
 */
async function validatesDuring(client: RawClient, long: () => Promise<unknown>): Promise<string> {
  const validate = {
    org_id: 'bench-other-org',
    json_schema: { type: 'object', properties: { q: { type: 'string' } } },
  };
  let longMs: number | undefined;
  const t0 = performance.now();
  void long().then(
    () => (longMs = performance.now() - t0),
    () => (longMs = performance.now() - t0),
  );
  const samples: number[] = [];
  do {
    const t = performance.now();
    const answered = await client.req('toolplane.v1.schemas.validate', validate, { timeoutMs: 60_000 }).then(
      () => true,
      () => false,
    );
    if (!answered)
      return `${'(none)'.padStart(9)}${String(samples.length).padStart(11)}${'-'.padStart(9)}${'> 60 000'.padStart(9)}  (no validate answered)`;
    samples.push(performance.now() - t);
  } while (longMs === undefined);
  const s = summarize(samples, 1);
  return `${longMs.toFixed(1).padStart(9)}${String(s.n).padStart(11)}${s.p50.toFixed(2).padStart(9)}${Math.max(
    ...samples,
  )
    .toFixed(2)
    .padStart(9)}`;
}

async function service(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const db = `tp_bench_${id}`;
  const prefix = `bench${id}`;
  await createDatabase(db);
  const stack = await startStack({
    prefix,
    databaseUrl: databaseUrlFor(db),
    apps: ['schema', 'credentials'],
    env: { LOG_LEVEL: 'warn' },
  });
  const client = await RawClient.connect(prefix);
  try {
    const generate =
      (source_code: string, source_type = 'python') =>
      async () => {
        const r = await client.req(
          'toolplane.v1.schemas.generate',
          { source_code, source_type },
          { timeoutMs: 120_000 },
        );
        if (
          r.error &&
          r.error.details?.reason !== 'SOURCE_TOO_LARGE' &&
          r.error.details?.reason !== 'TIME_LIMIT_EXCEEDED'
        )
          throw new Error(JSON.stringify(r.error));
      };
    const validate = async () =>
      void (await client.req('toolplane.v1.schemas.validate', {
        json_schema: { type: 'object', properties: { q: { type: 'string' } } },
      }));
    for (let w = 0; w < 50; w += 1)
      await Promise.all([generate(TYPICAL)(), generate(TS_TYPICAL, 'typescript')(), validate()]); // JIT, tokens, both workers
    out(`\n3. schema service over NATS (${N} calls per case, concurrency 1)`);
    out(HEADER);
    out(row('validate, idle (baseline)', await measure(N, 1, validate)));
    out(row('generate py typical', await measure(N, 1, generate(TYPICAL))));
    out(row('generate ts typical', await measure(N, 1, generate(TS_TYPICAL, 'typescript'))));
    out(row('generate py small', await measure(N, 1, generate(SMALL))));
    const issue = PATHOLOGICAL[0]![2];
    out(row('generate, issue source (x + 100 000 spaces)', await measure(3, 1, generate(issue))));
    out(`\n   schemas.validate sent back to back, by another org, while a long generate is in flight:`);
    out(
      `   ${'in flight'.padEnd(42)}${'its ms'.padStart(9)}${'validates'.padStart(11)}${'p50 ms'.padStart(9)}${'max ms'.padStart(9)}`,
    );
    const runs: Array<[string, string, string]> = [
      ['issue source (x + 100 000 spaces)', issue, 'python'],
      ['50 000-member Union (~250 KB, legit)', HEAVY, 'python'],
      ['TS: 40 x "async (a) => async (" (no end)', tsBomb(40), 'typescript'], // last: an old build never recovers
    ];
    for (const [label, source, sourceType] of runs)
      out(`   ${label.padEnd(42)}${await validatesDuring(client, generate(source, sourceType))}`);
  } finally {
    await client.close();
    await stack.stop();
    await dropDatabase(db);
  }
}

/** Part 4, only in a build with the schema service's worker pool. */
async function poolRoundTrip(): Promise<void> {
  const dist = join(__dirname, '..', '..', 'apps', 'schema', 'src', 'schemas');
  if (!existsSync(join(dist, 'worker-pool.js')))
    return void out('\n4. worker pool round trip: n/a (this build has no worker pool)');
  const { WorkerPool } = require(
    join(dist, 'worker-pool.js'),
  ) as typeof import('../../apps/schema/src/schemas/worker-pool');
  const pool = new WorkerPool({
    script: join(dist, 'schemas.worker.js'),
    workerData: {},
    size: 2,
    timeLimitMs: 10_000,
    maxQueue: 100,
    maxQueueWaitMs: 10_000,
  });
  await pool.start();
  const engine = await createSchemaEngine();
  const schema = { type: 'object', properties: { q: { type: 'string' } } };
  const cases: Array<[string, () => unknown, () => Promise<unknown>]> = [
    [
      'generate py typical',
      () => engine.generate({ source_code: TYPICAL }),
      () => pool.run({ op: 'generate', input: { source_code: TYPICAL } }),
    ],
    [
      'generate ts typical',
      () => engine.generate({ source_code: TS_TYPICAL, source_type: 'typescript' }),
      () => pool.run({ op: 'generate', input: { source_code: TS_TYPICAL, source_type: 'typescript' } }),
    ],
    ['validate (small)', () => engine.validate(schema), () => pool.run({ op: 'validate', json_schema: schema })],
  ];
  out('\n4. worker pool round trip (µs per call, p50)');
  out(`${'case'.padEnd(24)}${'inline'.padStart(10)}${'pool'.padStart(10)}${'added'.padStart(10)}`);
  try {
    for (const [name, inline, pooled] of cases) {
      for (let i = 0; i < 500; i += 1) await pooled();
      const samples: number[] = [];
      for (let i = 0; i < 2000; i += 1) {
        const t = performance.now();
        await pooled();
        samples.push((performance.now() - t) * 1000);
      }
      const a = time(2000, inline).p50;
      const b = summarize(samples, 1).p50;
      out(
        `${name.padEnd(24)}${a.toFixed(1).padStart(10)}${b.toFixed(1).padStart(10)}${(b - a).toFixed(1).padStart(10)}`,
      );
    }
  } finally {
    await pool.close();
  }
}

async function main(): Promise<void> {
  out(`Toolplane schema benchmark (${new Date().toISOString()})\n`);
  if (PARTS.includes('1')) await engineInProcess();
  if (PARTS.includes('2')) await pathological();
  if (PARTS.includes('3')) await service();
  if (PARTS.includes('4')) await poolRoundTrip();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
