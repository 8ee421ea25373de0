export { createSchemaEngine } from './schema-engine';
export { jsonByteLength } from './json-schema/json-walk';
export { normalizeMcpSchema } from './json-schema/mcp.normalizer';
export { toStrictSchema } from './json-schema/strict.converter';
export { validateSchema } from './json-schema/schema.validator';
export { SchemaGenerationError, type SchemaErrorDetails, type SchemaErrorReason } from './schema-generation.error';
export type {
  FunctionSchema,
  GenerateInput,
  GenerateOutput,
  JsonSchema,
  NormalizeResult,
  SchemaEngine,
  SchemaEngineOptions,
  SchemaHealth,
  StrictResult,
  ValidationReport,
} from './schema-engine.types';
