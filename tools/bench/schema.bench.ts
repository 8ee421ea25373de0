/**
 * Times schema generation from Python source: a small tool, a typical one (5 parameters) and a
 * large one (200 parameters, a model and 100 helpers). The baseline is a bare tree-sitter parse
 * of the same source, i.e. the floor the engine's own work is added to.
 *
 *   npm run build && node dist/tools/bench/schema.bench.js
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createSchemaEngine } from '@toolplane/schema-engine';
import { Language, Parser } from 'web-tree-sitter';

const SMALL = `def roll_d20() -> str:
    """Simulate the roll of a 20-sided die (d20)."""
    import random
    return str(random.randint(1, 20))
`;

const TYPICAL = `from typing import List, Optional, Literal

def search_flights(origin: str, destination: str, date: str, passengers: int = 1,
                   cabin: Literal["economy", "business"] = "economy") -> List[dict]:
    """Search flights between two airports.

    Returns matching flights sorted by price.

    Args:
        origin (str): IATA code of the departure airport.
        destination (str): IATA code of the arrival airport.
        date (str): Departure date, YYYY-MM-DD.
        passengers (int): Number of travellers.
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

function time(iterations: number, fn: () => void): number {
  for (let i = 0; i < Math.min(50, iterations); i += 1) fn(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i += 1) fn();
  return Number(process.hrtime.bigint() - start) / 1000 / iterations;
}

async function main(): Promise<void> {
  const engine = await createSchemaEngine();
  await Parser.init();
  const wasm = join(dirname(require.resolve('tree-sitter-python/package.json')), 'tree-sitter-python.wasm');
  const parser = new Parser().setLanguage(await Language.load(readFileSync(wasm)));

  const cases: Array<[string, string, number]> = [
    ['small', SMALL, 5000],
    ['typical (5 params)', TYPICAL, 2000],
    ['large (200 params)', large(), 100],
  ];
  process.stdout.write(`${'case'.padEnd(22)}${'bytes'.padStart(8)}${'generate µs/op'.padStart(16)}${'parse-only µs/op'.padStart(18)}${'overhead'.padStart(10)}\n`);
  for (const [name, source, iterations] of cases) {
    const generate = time(iterations, () => engine.generate({ source_code: source }));
    const parse = time(iterations, () => parser.parse(source)?.delete());
    process.stdout.write(
      `${name.padEnd(22)}${String(Buffer.byteLength(source)).padStart(8)}${generate.toFixed(1).padStart(16)}${parse.toFixed(1).padStart(18)}${`${(generate / parse).toFixed(2)}x`.padStart(10)}\n`,
    );
  }
  parser.delete();
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
