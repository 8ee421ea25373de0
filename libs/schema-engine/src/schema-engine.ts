import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Language, Parser } from 'web-tree-sitter';
import { Deadline } from './deadline';
import { toFunctionSchema } from './json-schema/json-schema.backend';
import { validateSchema } from './json-schema/schema.validator';
import { PythonFrontend } from './python/python.frontend';
import { SchemaGenerationError } from './schema-generation.error';
import type { GenerateInput, GenerateOutput, SchemaEngine, SchemaEngineOptions, ValidationReport } from './schema-engine.types';

export const DEFAULT_MAX_SOURCE_BYTES = 256 * 1024;
export const DEFAULT_TIME_LIMIT_MS = 2000;

let pythonLanguage: Promise<Language> | undefined;

/** Loads the tree-sitter runtime and the Python grammar once per process. */
function loadPython(): Promise<Language> {
  pythonLanguage ??= (async () => {
    await Parser.init();
    const wasm = join(dirname(require.resolve('tree-sitter-python/package.json')), 'tree-sitter-python.wasm');
    // Bytes rather than a path: loading by path needs a dynamic import, unavailable under CommonJS jest.
    return Language.load(readFileSync(wasm));
  })().catch((e: unknown) => {
    pythonLanguage = undefined;
    throw e;
  });
  return pythonLanguage;
}

class TreeSitterSchemaEngine implements SchemaEngine {
  private readonly python: PythonFrontend;

  constructor(
    language: Language,
    private readonly maxSourceBytes: number,
    private readonly timeLimitMs: number,
  ) {
    this.python = new PythonFrontend(new Parser().setLanguage(language));
  }

  generate(input: GenerateInput): GenerateOutput {
    const deadline = new Deadline(this.timeLimitMs);
    const source = input.source_code;
    if (typeof source !== 'string') throw new SchemaGenerationError('SYNTAX_ERROR', 'source_code must be a string');
    const bytes = Buffer.byteLength(source, 'utf8');
    if (bytes > this.maxSourceBytes) {
      throw new SchemaGenerationError('SOURCE_TOO_LARGE', `Source is ${bytes} bytes; the limit is ${this.maxSourceBytes} bytes`);
    }
    const sourceType = input.source_type ?? 'python';
    if (sourceType !== 'python') {
      throw new SchemaGenerationError('UNSUPPORTED_SOURCE_TYPE', `Source type '${String(sourceType)}' is not supported yet (supported: python)`);
    }
    const fn = this.python.describeFunction(source, input.name, deadline);
    const json_schema = toFunctionSchema(fn);
    deadline.check();
    return { json_schema, ...validateSchema(json_schema) };
  }

  validate(jsonSchema: unknown): ValidationReport {
    return validateSchema(jsonSchema);
  }
}

/** Loads the grammar once; generate() and validate() are synchronous afterwards. */
export async function createSchemaEngine(options: SchemaEngineOptions = {}): Promise<SchemaEngine> {
  const language = await loadPython();
  return new TreeSitterSchemaEngine(
    language,
    options.maxSourceBytes ?? DEFAULT_MAX_SOURCE_BYTES,
    options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS,
  );
}
