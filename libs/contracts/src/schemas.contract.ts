import { z } from 'zod';
import { JsonObject, MAX_SOURCE_BYTES, OrgId, ToolName } from './common';
import { defineRequest } from './descriptor';
import { SourceType } from './tool';

export const SchemaHealth = z.enum(['STRICT_COMPLIANT', 'NON_STRICT_ONLY', 'INVALID']);
export type SchemaHealth = z.infer<typeof SchemaHealth>;

export const FunctionJsonSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  parameters: z.looseObject({ type: z.literal('object'), properties: JsonObject, required: z.array(z.string()).optional() }),
});

export const SchemasGenerate = defineRequest({
  subject: 'toolplane.v1.schemas.generate',
  visibility: 'public',
  summary: 'Derive an LLM function-calling JSON schema from tool source, without running it.',
  request: z.strictObject({
    org_id: OrgId.optional(),
    source_code: z.string().min(1).max(MAX_SOURCE_BYTES),
    source_type: SourceType.default('python'),
    name: ToolName.optional(),
  }),
  reply: z.object({ json_schema: FunctionJsonSchema, health: SchemaHealth, reasons: z.array(z.string()) }),
});

export const SchemasValidate = defineRequest({
  subject: 'toolplane.v1.schemas.validate',
  visibility: 'public',
  summary: 'Classify a JSON schema for LLM function calling: STRICT_COMPLIANT, NON_STRICT_ONLY or INVALID.',
  request: z.strictObject({ org_id: OrgId.optional(), json_schema: JsonObject }),
  reply: z.object({ health: SchemaHealth, reasons: z.array(z.string()) }),
});
