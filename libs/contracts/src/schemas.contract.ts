import { z } from 'zod';
import {
  JsonObject,
  MAX_DOCSTRING_BYTES,
  MAX_GENERATED_SCHEMA_BYTES,
  MAX_SOURCE_BYTES,
  OrgId,
  ToolName,
} from './common';
import { defineRequest } from './descriptor';
import { SourceType } from './tool';

export const SchemaHealth = z.enum(['STRICT_COMPLIANT', 'NON_STRICT_ONLY', 'INVALID']);
export type SchemaHealth = z.infer<typeof SchemaHealth>;

export const FunctionJsonSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  parameters: z.looseObject({
    type: z.literal('object'),
    properties: JsonObject,
    required: z.array(z.string()).optional(),
  }),
});

export const SchemasGenerate = defineRequest({
  subject: 'toolplane.v1.schemas.generate',
  visibility: 'public',
  servedBy: 'schema',
  scope: 'tools:read',
  summary: `Derive an LLM function-calling JSON schema from tool source, without running it. Limits: a docstring or JSDoc comment of at most ${MAX_DOCSTRING_BYTES} bytes (else SOURCE_TOO_LARGE), a schema of at most ${MAX_GENERATED_SCHEMA_BYTES} bytes of JSON (else SCHEMA_TOO_LARGE), and the service's time limit (TIME_LIMIT_EXCEEDED).`,
  request: z.strictObject({
    org_id: OrgId.optional(),
    source_code: z.string().min(1).max(MAX_SOURCE_BYTES),
    source_type: SourceType.default('python'),
    name: ToolName.optional(),
    /** A JSON schema of the arguments (pydantic model_json_schema()): parameters come from it, the description from the source. */
    args_json_schema: JsonObject.optional(),
  }),
  reply: z.object({ json_schema: FunctionJsonSchema, health: SchemaHealth, reasons: z.array(z.string()) }),
});

export const SchemasValidate = defineRequest({
  subject: 'toolplane.v1.schemas.validate',
  visibility: 'public',
  servedBy: 'schema',
  scope: 'tools:read',
  summary: 'Classify a JSON schema for LLM function calling: STRICT_COMPLIANT, NON_STRICT_ONLY or INVALID.',
  request: z.strictObject({ org_id: OrgId.optional(), json_schema: JsonObject }),
  reply: z.object({ health: SchemaHealth, reasons: z.array(z.string()) }),
});

export const SchemasStrictify = defineRequest({
  subject: 'toolplane.v1.schemas.strictify',
  visibility: 'public',
  servedBy: 'schema',
  scope: 'tools:read',
  summary:
    'Convert a function schema (or its parameters) for OpenAI strict mode: every property required, optional ones nullable, additionalProperties false. A schema that cannot be strict comes back unchanged with strict: false and the reasons.',
  request: z.strictObject({ org_id: OrgId.optional(), json_schema: JsonObject }),
  reply: z.object({ json_schema: JsonObject, strict: z.boolean(), health: SchemaHealth, reasons: z.array(z.string()) }),
});

/** schemas.normalize echoes its input (original_json_schema) only up to this many bytes of JSON. */
export const MAX_ECHOED_SCHEMA_BYTES = 64 * 1024;

export const SchemasNormalize = defineRequest({
  subject: 'toolplane.v1.schemas.normalize',
  visibility: 'public',
  servedBy: 'schema',
  scope: 'tools:read',
  summary: `Normalize an MCP tool's input schema for LLM providers (local $refs inlined, explicit object schemas, safe oneOf → anyOf); the original is returned beside it when it is at most ${MAX_ECHOED_SCHEMA_BYTES} bytes of JSON (else it is left out and changes says so). Remote $refs are never fetched.`,
  request: z.strictObject({ org_id: OrgId.optional(), json_schema: JsonObject }),
  reply: z.object({
    json_schema: JsonObject,
    /** The input, when it is at most MAX_ECHOED_SCHEMA_BYTES of JSON (the reply must fit the bus). */
    original_json_schema: JsonObject.optional(),
    changes: z.array(z.string()),
    health: SchemaHealth,
    reasons: z.array(z.string()),
  }),
});
