import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Language, Parser } from 'web-tree-sitter';
import { Budget } from './budget';
import { toFunctionSchema } from './json-schema/json-schema.backend';
import { parametersFromArgsSchema } from './json-schema/args-schema';
import { jsonByteLength } from './json-schema/json-walk';
import {
  DEFAULT_MAX_DOCSTRING_BYTES,
  DEFAULT_MAX_SCHEMA_BYTES,
  DEFAULT_MAX_SOURCE_BYTES,
  MAX_SCHEMA_DEPTH,
} from './limits';
import { normalizeMcpSchema } from './json-schema/mcp.normalizer';
import { validateSchema } from './json-schema/schema.validator';
import { toStrictSchema } from './json-schema/strict.converter';
import { PythonFrontend } from './python/python.frontend';
import { SchemaGenerationError } from './schema-generation.error';
import type {
  FunctionSchema,
  GenerateInput,
  GenerateOutput,
  NormalizeResult,
  SchemaEngine,
  SchemaEngineOptions,
  StrictResult,
  ValidationReport,
} from './schema-engine.types';
import type * as TypeScriptFrontendModule from './typescript/typescript.frontend';

const DEFAULT_TIME_LIMIT_MS = 2000;

interface Limits {
  maxSourceBytes: number;
  maxDocstringBytes: number;
  maxSchemaBytes: number;
  timeLimitMs: number;
}

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

/**
 * The TypeScript front-end, required at an engine's first TypeScript source rather than with this
 * lib: it loads the TypeScript compiler, ~45 MiB resident per thread (schema service workers
 * that see only Python never pay it; mcp-sync imports this lib only to validate and normalize).
 * The first TypeScript source of a thread waits for it (~110 ms with V8's compile cache).
 */
function typescriptFrontend(): TypeScriptFrontendModule.TypeScriptFrontend {
  const { TypeScriptFrontend } = require('./typescript/typescript.frontend') as typeof TypeScriptFrontendModule;
  return new TypeScriptFrontend();
}

class TreeSitterSchemaEngine implements SchemaEngine {
  private readonly python: PythonFrontend;
  private typescript?: TypeScriptFrontendModule.TypeScriptFrontend;

  constructor(
    language: Language,
    private readonly limits: Limits,
    preloadTypeScript: boolean,
  ) {
    this.python = new PythonFrontend(new Parser().setLanguage(language));
    if (preloadTypeScript) this.typescript = typescriptFrontend();
  }

  generate(input: GenerateInput, opts: { timeLimitMs?: number } = {}): GenerateOutput {
    const { maxSourceBytes, maxDocstringBytes, maxSchemaBytes } = this.limits;
    const timeLimitMs = opts.timeLimitMs ?? this.limits.timeLimitMs;
    const source = input.source_code;
    if (typeof source !== 'string') throw new SchemaGenerationError('SYNTAX_ERROR', 'source_code must be a string');
    const bytes = Buffer.byteLength(source, 'utf8');
    if (bytes > maxSourceBytes) {
      throw new SchemaGenerationError(
        'SOURCE_TOO_LARGE',
        `Source is ${bytes} bytes; the limit is ${maxSourceBytes} bytes`,
      );
    }
    const sourceType = input.source_type ?? 'python';
    if (sourceType !== 'python' && sourceType !== 'typescript') {
      throw new SchemaGenerationError(
        'UNSUPPORTED_SOURCE_TYPE',
        `Source type '${String(sourceType)}' is not supported (supported: python, typescript)`,
      );
    }
    const headerOnly = input.args_json_schema !== undefined;
    const frontend = sourceType === 'python' ? this.python : (this.typescript ??= typescriptFrontend());
    // The budget starts once the front-end is loaded: loading the compiler is not the source's doing.
    const budget = new Budget({ timeLimitMs, maxSchemaBytes, maxDepth: MAX_SCHEMA_DEPTH });
    const fn = frontend.describeFunction(source, input.name, budget, { headerOnly, maxDocstringBytes });
    const json_schema: FunctionSchema = headerOnly
      ? { name: fn.name, description: fn.description, parameters: parametersFromArgsSchema(input.args_json_schema) }
      : toFunctionSchema(fn, budget);
    const schemaBytes = jsonByteLength(json_schema, maxSchemaBytes);
    if (schemaBytes > maxSchemaBytes) {
      throw new SchemaGenerationError(
        'SCHEMA_TOO_LARGE',
        `The generated schema is larger than ${maxSchemaBytes} bytes (the limit)`,
      );
    }
    budget.check();
    return { json_schema, ...validateSchema(json_schema) };
  }

  validate(jsonSchema: unknown): ValidationReport {
    return validateSchema(jsonSchema);
  }

  toStrict(jsonSchema: unknown): StrictResult {
    return toStrictSchema(jsonSchema);
  }

  normalizeMcp(jsonSchema: unknown): NormalizeResult {
    return normalizeMcpSchema(jsonSchema);
  }
}

/** Loads the grammar once; generate() and validate() are synchronous afterwards (the first TypeScript source loads the compiler, unless preloadTypeScript). */
export async function createSchemaEngine(options: SchemaEngineOptions = {}): Promise<SchemaEngine> {
  const language = await loadPython();
  return new TreeSitterSchemaEngine(
    language,
    {
      maxSourceBytes: options.maxSourceBytes ?? DEFAULT_MAX_SOURCE_BYTES,
      maxDocstringBytes: options.maxDocstringBytes ?? DEFAULT_MAX_DOCSTRING_BYTES,
      maxSchemaBytes: options.maxSchemaBytes ?? DEFAULT_MAX_SCHEMA_BYTES,
      timeLimitMs: options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS,
    },
    options.preloadTypeScript === true,
  );
}
