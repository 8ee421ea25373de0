/**
 * The `args_json_schema` path: a tool brings its arguments as a pydantic `model_json_schema()`
 * (or any JSON object schema). The parameters come from it, local `$ref`s inlined; enum, format
 * and constraints are kept; pydantic's generated `title`s are dropped (Letta's schemas carry none).
 */
import { SchemaGenerationError } from '../schema-generation.error';
import type { FunctionSchema, JsonSchema } from '../schema-engine.types';
import { forEachSubschema, isObject, put, tooDeepOrCyclic, type Obj } from './json-walk';
import { inlineLocalRefs } from './ref-inliner';

export function parametersFromArgsSchema(args: unknown): FunctionSchema['parameters'] {
  if (!isObject(args) || tooDeepOrCyclic(args)) {
    throw new SchemaGenerationError(
      'INVALID_ARGS_SCHEMA',
      'args_json_schema must be a JSON object schema nested at most 100 levels deep',
    );
  }
  const { schema } = inlineLocalRefs(args, { maxDepth: 16, maxNodes: 10_000 });
  if (
    (schema.type !== undefined && schema.type !== 'object') ||
    (schema.properties !== undefined && !isObject(schema.properties))
  ) {
    throw new SchemaGenerationError(
      'INVALID_ARGS_SCHEMA',
      "args_json_schema must describe an object: {type: 'object', properties: {...}}",
    );
  }
  stripTitles(schema);
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const listed = Array.isArray(schema.required) ? new Set(schema.required) : new Set();
  const parameters: FunctionSchema['parameters'] = {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((k) => listed.has(k)),
  };
  for (const key of ['additionalProperties', '$defs', 'definitions'])
    if (key in schema) put(parameters, key, schema[key]);
  return parameters;
}

function stripTitles(node: Obj): void {
  if (typeof node.title === 'string') delete node.title;
  forEachSubschema(node, stripTitles);
}
