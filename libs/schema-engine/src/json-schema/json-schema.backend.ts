/**
 * JSON-schema back-end: turns the front-ends' FunctionIR into an OpenAI function-calling schema
 * `{name, description, parameters: {type: 'object', properties, required}}`.
 */
import type { FieldIR, FunctionIR, LiteralValue, TypeIR } from '../ir';
import type { Budget } from '../budget';
import type { FunctionSchema, JsonSchema } from '../schema-engine.types';

const textBytes = (s: string | undefined): number => (s ? s.length : 0);

/** Sets an own, enumerable key, even one named `__proto__`. */
function put(target: JsonSchema, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The function schema of `fn`; the budget bounds what the writing may cost (see Budget). */
export function toFunctionSchema(fn: FunctionIR, budget: Budget): FunctionSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const p of fn.parameters) {
    put(properties, p.name, fieldSchema(p, budget));
    if (p.required) required.push(p.name);
  }
  return { name: fn.name, description: fn.description, parameters: { type: 'object', properties, required } };
}

/**
 * A property: its type's schema, then the description (or in place, when the type already
 * carries one, e.g. a model's docstring), then `default` when the default is a static literal.
 * An optional value whose default is None drops `null` from its type, as Letta does: omitting it
 * already yields None.
 */
function fieldSchema(field: FieldIR, budget: Budget): JsonSchema {
  budget.charge(textBytes(field.name) + textBytes(field.description));
  const type = !field.required && field.defaultIsNull ? withoutNull(field.type) : field.type;
  const schema = typeSchema(type, budget);
  // Python parameters and fields always have one; TypeScript members may have no JSDoc.
  if (field.description) schema.description = field.description;
  if (field.default !== undefined) schema.default = field.default;
  return schema;
}

/** The fewest bytes writeType writes for a type of each kind, its members aside (`{"type":"array","items":`…). */
const LEAST_BYTES: Record<TypeIR['kind'], number> = {
  primitive: 15,
  any: 2,
  array: 24,
  tuple: 60,
  map: 17,
  object: 47,
  enum: 25,
  union: 0,
  annotated: 0,
};

function typeSchema(t: TypeIR, budget: Budget): JsonSchema {
  budget.charge(LEAST_BYTES[t.kind]);
  return budget.nested(() => writeType(t, budget));
}

function writeType(t: TypeIR, budget: Budget): JsonSchema {
  const inner = (x: TypeIR): JsonSchema => typeSchema(x, budget);
  switch (t.kind) {
    case 'primitive':
      return { type: t.type };
    case 'any':
      return {};
    case 'array':
      // An untyped list is a list of strings, as in Letta.
      return {
        type: 'array',
        items: t.items ? inner(t.items) : { type: 'string' },
        ...(t.uniqueItems ? { uniqueItems: true } : {}),
      };
    case 'tuple':
      return {
        type: 'array',
        prefixItems: t.items.map(inner),
        items: unionSchema(t.items, budget),
        minItems: t.items.length,
        maxItems: t.items.length,
      };
    case 'map':
      return t.values ? { type: 'object', additionalProperties: inner(t.values) } : { type: 'object' };
    case 'object': {
      const properties: Record<string, JsonSchema> = {};
      budget.charge(textBytes(t.description));
      for (const f of t.fields) put(properties, f.name, fieldSchema(f, budget));
      return {
        type: 'object',
        properties,
        required: t.fields.filter((f) => f.required).map((f) => f.name),
        ...(t.description !== undefined ? { description: t.description } : {}),
      };
    }
    case 'enum':
      for (const v of t.values) budget.charge(typeof v === 'string' ? v.length + 2 : 1);
      return { type: enumType(t.values), enum: [...t.values] };
    case 'union':
      return unionSchema(t.members, budget);
    case 'annotated':
      budget.charge(textBytes(t.description));
      return {
        ...inner(t.inner),
        ...(t.constraints ?? {}),
        ...(t.description !== undefined ? { description: t.description } : {}),
      };
  }
}

function jsonType(v: LiteralValue): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string | boolean
}

function enumType(values: LiteralValue[]): string | string[] {
  let types = [...new Set(values.map(jsonType))];
  if (types.includes('number')) types = types.filter((x) => x !== 'integer');
  return types.length === 1 ? types[0] : types;
}

/**
 * Union members with nested unions spliced in, each IR node once (a shared union reached twice
 * would give the same schemas, which the caller drops as duplicates anyway).
 */
function flatten(members: TypeIR[], budget?: Budget): TypeIR[] {
  const out: TypeIR[] = [];
  const seen = new Set<TypeIR>();
  const visit = (list: TypeIR[]): void => {
    for (const m of list) {
      if (seen.has(m)) continue;
      seen.add(m);
      budget?.charge(1);
      if (m.kind === 'union') visit(m.members);
      else out.push(m);
    }
  };
  visit(members);
  return out;
}

const isNull = (t: TypeIR): boolean => t.kind === 'primitive' && t.type === 'null';

function unionSchema(members: TypeIR[], budget: Budget): JsonSchema {
  const flat = flatten(members, budget);
  if (flat.some((m) => m.kind === 'any')) return {};
  const nullable = flat.some(isNull);
  const nonNull = flat.filter((m) => !isNull(m));
  const seen = new Set<string>();
  const schemas: JsonSchema[] = [];
  for (const m of nonNull) {
    const s = typeSchema(m, budget);
    if (nonNull.length === 1) {
      schemas.push(s); // nothing to compare with (Optional[X]): no key to build
      continue;
    }
    const key = JSON.stringify(s);
    budget.charge(key.length); // comparing costs as much as writing: count it
    if (!seen.has(key)) {
      seen.add(key);
      schemas.push(s);
    }
  }
  if (schemas.length === 0) return { type: 'null' };
  if (schemas.length === 1) return nullable ? makeNullable(schemas[0]) : schemas[0];
  const simple = schemas.every((s) => Object.keys(s).length === 1 && typeof s.type === 'string');
  if (simple) return { type: [...schemas.map((s) => s.type as string), ...(nullable ? ['null'] : [])] };
  return { anyOf: [...schemas, ...(nullable ? [{ type: 'null' }] : [])] };
}

const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);

/** Scalars, enums and bare `{type}` become `type: [T, 'null']`; structured schemas `anyOf: [schema, {type: 'null'}]`. */
function makeNullable(schema: JsonSchema): JsonSchema {
  const keys = Object.keys(schema);
  if (keys.length === 0) return schema;
  if (typeof schema.type === 'string' && (SCALARS.has(schema.type) || keys.length === 1)) {
    return {
      ...schema,
      type: [schema.type, 'null'],
      ...(Array.isArray(schema.enum) ? { enum: [...schema.enum, null] } : {}),
    };
  }
  if (Array.isArray(schema.type) && Array.isArray(schema.enum) && !schema.enum.includes(null)) {
    return { ...schema, type: [...schema.type, 'null'], enum: [...schema.enum, null] };
  }
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  return { anyOf: [schema, { type: 'null' }] };
}

function withoutNull(t: TypeIR): TypeIR {
  if (t.kind === 'annotated') return { ...t, inner: withoutNull(t.inner) };
  if (t.kind === 'enum') {
    const values = t.values.filter((v) => v !== null);
    return values.length > 0 ? { kind: 'enum', values } : t;
  }
  if (t.kind !== 'union') return t;
  const rest = flatten(t.members).filter((m) => !isNull(m));
  if (rest.length === 0) return t;
  return rest.length === 1 ? rest[0] : { kind: 'union', members: rest };
}
