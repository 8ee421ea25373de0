export { createSchemaEngine, DEFAULT_MAX_SOURCE_BYTES, DEFAULT_TIME_LIMIT_MS } from './schema-engine';
export { SchemaGenerationError, type SchemaErrorReason } from './schema-generation.error';
export type {
  FunctionSchema,
  GenerateInput,
  GenerateOutput,
  JsonSchema,
  SchemaEngine,
  SchemaEngineOptions,
  SchemaHealth,
  ValidationReport,
} from './schema-engine.types';
