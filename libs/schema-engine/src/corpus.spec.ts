import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSchemaEngine } from './schema-engine';
import { SchemaGenerationError } from './schema-generation.error';
import type { SchemaEngine } from './schema-engine.types';

/**
 * The corpus: every source in corpus/<language>/ with its expected schema (and health) or error.
 * `NNN_slug.py` / `NNN_slug.ts.txt` (kept out of the TypeScript build), `NNN_slug.expected.json`,
 * and optionally `NNN_slug.input.json` with extra request fields (e.g. `name`).
 */
const ROOT = join(__dirname, '..', 'corpus');

interface Case {
  file: string;
  source: string;
  input: Record<string, unknown>;
  expected: { json_schema?: unknown; health?: string; error?: Record<string, unknown> };
}

function load(language: string, ext: string): Case[] {
  const dir = join(ROOT, language);
  return readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .sort()
    .map((file) => {
      const stem = join(dir, file.slice(0, -ext.length));
      if (!existsSync(`${stem}.expected.json`)) throw new Error(`${file} has no .expected.json`);
      return {
        file,
        source: readFileSync(join(dir, file), 'utf8'),
        input: existsSync(`${stem}.input.json`) ? JSON.parse(readFileSync(`${stem}.input.json`, 'utf8')) : {},
        expected: JSON.parse(readFileSync(`${stem}.expected.json`, 'utf8')),
      };
    });
}

const python = load('python', '.py');
const typescript = load('typescript', '.ts.txt');

describe('schema corpus', () => {
  let sut: SchemaEngine;
  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  it('holds at least 60 Python and 20 TypeScript sources, seeds included, with errors and schemas both covered', () => {
    expect(python.length).toBeGreaterThanOrEqual(60);
    expect(typescript.length).toBeGreaterThanOrEqual(20);
    expect(python.filter((c) => c.file.includes('_seed_')).length).toBeGreaterThanOrEqual(4);
    for (const cases of [python, typescript]) {
      expect(cases.filter((c) => c.expected.error).length).toBeGreaterThanOrEqual(8);
      expect(cases.filter((c) => c.expected.json_schema).length).toBeGreaterThanOrEqual(12);
    }
  });

  describe.each([
    ['python', python],
    ['typescript', typescript],
  ] as const)('%s', (language, cases) => {
    it.each(cases.map((c) => [c.file, c] as const))('%s', (_file, c) => {
      let actual: Case['expected'];
      try {
        const out = sut.generate({ source_code: c.source, source_type: language, ...c.input });
        actual = { json_schema: out.json_schema, health: out.health };
      } catch (e) {
        if (!(e instanceof SchemaGenerationError)) throw e;
        actual = {
          error: {
            reason: e.reason,
            message: e.message,
            ...(e.line ? { line: e.line } : {}),
            ...(e.column ? { column: e.column } : {}),
            ...(e.parameter ? { parameter: e.parameter } : {}),
          },
        };
      }
      expect(actual).toEqual(c.expected);
      // Key order of properties and required is part of the contract (the reference's order).
      expect(JSON.stringify(actual)).toBe(JSON.stringify(c.expected));
    });
  });
});
