/**
 * Each model API's tool definition, as a JSON Schema (draft 2020-12) transcribed from its API
 * reference and its official TypeScript SDK's types (pinned devDependencies: openai 7.55.0
 * `ChatCompletionFunctionTool` / `FunctionDefinition` and Responses `FunctionTool`;
 * @anthropic-ai/sdk 1.10.0 `Tool`; @google/genai 3.1.0 `FunctionDeclaration` and `Schema`).
 * Closed (`additionalProperties: false`) at the fields those types declare, so a definition with a
 * field the API does not know fails here. Gemini's Schema is closed at every level: its OpenAPI
 * subset is exactly these keywords. The tests check every definition the registry makes against them
 * (tool-definition.mapper.spec.ts, test/e2e/definitions.e2e.ts).
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

const OPENAI_NAME = '^[a-zA-Z0-9_-]{1,64}$';

export const OPENAI_CHAT_TOOL = {
  type: 'object',
  required: ['type', 'function'],
  additionalProperties: false,
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', pattern: OPENAI_NAME },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: { type: ['boolean', 'null'] },
      },
    },
  },
};

export const OPENAI_RESPONSES_TOOL = {
  type: 'object',
  required: ['type', 'name', 'parameters', 'strict'],
  additionalProperties: false,
  properties: {
    type: { const: 'function' },
    name: { type: 'string', pattern: OPENAI_NAME },
    description: { type: ['string', 'null'] },
    parameters: { type: ['object', 'null'] },
    strict: { type: ['boolean', 'null'] },
    defer_loading: { type: 'boolean' },
  },
};

export const ANTHROPIC_TOOL = {
  type: 'object',
  required: ['name', 'input_schema'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
    description: { type: 'string' },
    input_schema: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { const: 'object' },
        properties: { type: ['object', 'null'] },
        required: { type: ['array', 'null'], items: { type: 'string' } },
      },
    },
    strict: { type: 'boolean' },
    type: { enum: ['custom', null] },
    cache_control: { type: ['object', 'null'] },
  },
};

const INT64 = { type: 'string', pattern: '^-?[0-9]+$' };

export const GEMINI_FUNCTION_DECLARATION = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$' },
    description: { type: 'string' },
    parameters: {
      $ref: '#/$defs/Schema',
      // Gemini: parameter names start with a letter or _, then letters, digits, _ (max 64); an OBJECT names at least one property.
      properties: {
        properties: { type: 'object', minProperties: 1, propertyNames: { pattern: '^[a-zA-Z_][a-zA-Z0-9_]{0,63}$' } },
      },
    },
  },
  $defs: {
    Schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { enum: ['TYPE_UNSPECIFIED', 'STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL'] },
        description: { type: 'string' },
        title: { type: 'string' },
        format: { type: 'string' },
        nullable: { type: 'boolean' },
        enum: { type: 'array', items: { type: 'string' } },
        pattern: { type: 'string' },
        minimum: { type: 'number' },
        maximum: { type: 'number' },
        minLength: INT64,
        maxLength: INT64,
        minItems: INT64,
        maxItems: INT64,
        minProperties: INT64,
        maxProperties: INT64,
        required: { type: 'array', items: { type: 'string' } },
        propertyOrdering: { type: 'array', items: { type: 'string' } },
        default: true,
        example: true,
        items: { $ref: '#/$defs/Schema' },
        properties: { type: 'object', minProperties: 1, additionalProperties: { $ref: '#/$defs/Schema' } },
        anyOf: { type: 'array', items: { $ref: '#/$defs/Schema' } },
      },
    },
  },
};

/** The provider-neutral function schema (Letta's json_schema). */
export const JSON_SCHEMA_TOOL = {
  type: 'object',
  required: ['name', 'parameters'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    parameters: { type: 'object' },
    strict: { const: true },
  },
};

export const PROVIDER_TOOL_SCHEMAS = {
  openai_chat: OPENAI_CHAT_TOOL,
  openai_responses: OPENAI_RESPONSES_TOOL,
  anthropic: ANTHROPIC_TOOL,
  gemini: GEMINI_FUNCTION_DECLARATION,
  json_schema: JSON_SCHEMA_TOOL,
} as const;

export type ProviderFormat = keyof typeof PROVIDER_TOOL_SCHEMAS;

/** One compiled validator per format: the errors of a definition, or [] when the API would take it. */
export function providerValidators(): Record<ProviderFormat, (definition: unknown) => string[]> {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const compiled = Object.fromEntries(
    Object.entries(PROVIDER_TOOL_SCHEMAS).map(([f, s]) => [f, ajv.compile(s)]),
  ) as Record<ProviderFormat, ValidateFunction>;
  const check = (f: ProviderFormat) => (d: unknown) =>
    compiled[f](d) ? [] : (compiled[f].errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`);
  return {
    openai_chat: check('openai_chat'),
    openai_responses: check('openai_responses'),
    anthropic: check('anthropic'),
    gemini: check('gemini'),
    json_schema: check('json_schema'),
  };
}
