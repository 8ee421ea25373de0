/**
 * Times schema generation from Python and TypeScript source: a small tool, a typical one
 * (5 parameters, one model/interface) and a large one (200 parameters, a model and 100 helpers).
 * The baseline is a bare parse of the same source (tree-sitter for Python, the TypeScript
 * compiler's createSourceFile for TypeScript), i.e. the floor the engine's own work is added to.
 *
 *   npm run build && node dist/tools/bench/schema.bench.js
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createSchemaEngine } from '@toolplane/schema-engine';
import * as ts from 'typescript';
import { Language, Parser } from 'web-tree-sitter';

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
  const helpers = Array.from({ length: 100 }, (_, i) => `def helper_${i}(x):\n    return [x, ${i}, {"k": (x, ${i})}]\n`).join('\n');
  const names = Array.from({ length: 200 }, (_, i) => `p${i}`);
  const model = `class Item(BaseModel):\n    """An item."""\n    name: str = Field(..., description="Name.")\n    tags: list[str] = Field(default_factory=list, description="Tags.")\n`;
  const params = names.map((n, i) => (i % 4 === 0 ? `${n}: Optional[list[Item]] = None` : `${n}: int = ${i}`)).join(', ');
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
  const helpers = Array.from({ length: 100 }, (_, i) => `function helper${i}(x: number) {\n  return [x, ${i}, { k: [x, ${i}] }];\n}\n`).join('\n');
  const names = Array.from({ length: 200 }, (_, i) => `p${i}`);
  const model = `/** An item. */\ninterface Item {\n  /** Name. */\n  name: string;\n  /** Tags. */\n  tags?: string[];\n}\n`;
  const params = names.map((n, i) => (i % 4 === 0 ? `${n}: Item[] | null = null` : `${n}: number = ${i}`)).join(', ');
  const docs = names.map((n) => ` * @param ${n} Parameter ${n}, described\n *   over two lines.`).join('\n');
  return `${helpers}\n${model}\n/**\n * A big tool.\n${docs}\n */\nexport function big(${params}) {\n  return null;\n}\n`;
}

function time(iterations: number, fn: () => void): number {
  for (let i = 0; i < Math.min(500, iterations); i += 1) fn(); // warm-up (the TypeScript parser needs more than tree-sitter)
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i += 1) fn();
  return Number(process.hrtime.bigint() - start) / 1000 / iterations;
}

async function main(): Promise<void> {
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
  process.stdout.write(`${'case'.padEnd(24)}${'bytes'.padStart(8)}${'generate µs/op'.padStart(16)}${'parse-only µs/op'.padStart(18)}${'overhead'.padStart(10)}\n`);
  for (const [name, language, source, iterations] of cases) {
    const generate = time(iterations, () => engine.generate({ source_code: source, source_type: language }));
    const parse = time(iterations, () => parseOnly(language, source));
    process.stdout.write(
      `${name.padEnd(24)}${String(Buffer.byteLength(source)).padStart(8)}${generate.toFixed(1).padStart(16)}${parse.toFixed(1).padStart(18)}${`${(generate / parse).toFixed(2)}x`.padStart(10)}\n`,
    );
  }
  const strictInput = engine.generate({ source_code: TS_TYPICAL, source_type: 'typescript' }).json_schema;
  process.stdout.write(`${'strictify (typical)'.padEnd(24)}${''.padStart(8)}${time(5000, () => engine.toStrict(strictInput)).toFixed(1).padStart(16)}\n`);
  parser.delete();
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
