/** Public types of the schema engine. The schema service and the registry depend on these shapes. */

import type { SchemaHealth } from '@toolplane/contracts';

/** The contracts' own (one definition of a schema's health across the tree). */
export type { SchemaHealth };

export interface JsonSchema {
  [k: string]: unknown;
}

// A type alias (not an interface) so that it stays assignable to loose records such as the
// contract's zod `looseObject` reply type.
export type FunctionSchema = {
  name: string;
  description: string;
  parameters: JsonSchema & { type: 'object'; properties: Record<string, JsonSchema>; required: string[] };
};

export interface GenerateInput {
  source_code: string;
  source_type?: 'python' | 'typescript';
  /** The function to describe; the last top-level function when absent. */
  name?: string;
  /** A JSON schema of the arguments (pydantic `model_json_schema()`): the parameters come from it. */
  args_json_schema?: JsonSchema;
}

export interface ValidationReport {
  health: SchemaHealth;
  reasons: string[];
}

export interface GenerateOutput extends ValidationReport {
  json_schema: FunctionSchema;
}

export interface StrictResult extends ValidationReport {
  /** The strict schema (`strict: true` on a function schema) when `strict`, else the input unchanged. */
  json_schema: JsonSchema;
  strict: boolean;
}

export interface NormalizeResult extends ValidationReport {
  json_schema: JsonSchema;
  /** The input, untouched. */
  original_json_schema: unknown;
  /** What normalization changed, for logs. */
  changes: string[];
}

export interface SchemaEngineOptions {
  /** Largest accepted source, in UTF-8 bytes. Default 256 KiB. */
  maxSourceBytes?: number;
  /** Largest docstring (Python: its value) or JSDoc comment, in UTF-8 bytes. Default 64 KiB. */
  maxDocstringBytes?: number;
  /** Largest generated schema, in UTF-8 bytes of JSON. Default 512 KiB. */
  maxSchemaBytes?: number;
  /** Wall-clock budget of one generate() call. Default 2000 ms. */
  timeLimitMs?: number;
  /**
   * Load the TypeScript front-end (the TypeScript compiler, ~45 MiB) with the engine instead of at
   * its first TypeScript source. A process that must answer TypeScript sources within a deadline
   * it does not own (the schema service's workers, ended by their pool at the time limit) preloads:
   * on a busy machine the load alone can take longer than the limit. Default false.
   */
  preloadTypeScript?: boolean;
}

export interface SchemaEngine {
  /** `timeLimitMs` overrides the engine's budget for this call. */
  generate(input: GenerateInput, opts?: { timeLimitMs?: number }): GenerateOutput;
  validate(jsonSchema: unknown): ValidationReport;
  /** OpenAI strict-mode conversion; never modifies its input. */
  toStrict(jsonSchema: unknown): StrictResult;
  /** MCP input-schema normalization; never modifies its input. */
  normalizeMcp(jsonSchema: unknown): NormalizeResult;
}

/** How a front-end describes a tool's source. */
export interface DescribeOptions {
  /** Only the name and description (the parameters come from elsewhere, e.g. args_json_schema). */
  headerOnly?: boolean;
  maxDocstringBytes?: number;
}
