/**
 * OpenAI strict-mode conversion: every object gets `additionalProperties: false` and lists all of
 * its properties in `required`; a property that was optional becomes nullable instead (so the
 * model can still say "no value"); `default` keywords are dropped (not a strict-mode keyword).
 * Applied recursively (properties, items, anyOf, $defs). Schemas that cannot be strict for other
 * reasons (free-form objects, unsupported keywords, limits) are returned unchanged with the
 * reasons. The input is never modified.
 */
import type { StrictResult } from '../schema-engine.types';
import { cloneJson, forEachSubschema, isObject, tooDeepOrCyclic, type Obj } from './json-walk';
import { validateSchema } from './schema.validator';

const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);
/** Keys that describe a property rather than constrain its value: they stay outside an added anyOf. */
const ANNOTATIONS = new Set(['description', 'title', 'default', 'examples', 'deprecated']);

export function toStrictSchema(input: unknown): StrictResult {
  if (!isObject(input) || tooDeepOrCyclic(input)) {
    const report = validateSchema(input);
    return {
      json_schema: isObject(input) ? input : {},
      strict: false,
      ...report,
      reasons: ['not converted: the schema is not a valid object schema', ...report.reasons],
    };
  }
  const before = validateSchema(input);
  if (before.health === 'INVALID')
    return {
      json_schema: cloneJson(input),
      strict: false,
      ...before,
      reasons: ['not converted: the schema is INVALID', ...before.reasons],
    };

  const copy = cloneJson(input);
  const wrapped = copy.type === 'function' && isObject(copy.function);
  const fn = wrapped ? (copy.function as Obj) : copy;
  const isFunction = 'parameters' in fn;
  if (isFunction) {
    if (isObject(fn.parameters)) convert(fn.parameters);
    fn.strict = true;
  } else {
    convert(fn);
  }
  const after = validateSchema(copy);
  if (after.health === 'STRICT_COMPLIANT')
    return { json_schema: copy, strict: true, health: after.health, reasons: [] };
  return {
    json_schema: cloneJson(input),
    strict: false,
    health: before.health,
    reasons: ['not converted: strict mode would still reject the schema after conversion', ...after.reasons],
  };
}

function isObjectSchema(node: Obj): boolean {
  const t = node.type;
  return t === 'object' || (Array.isArray(t) && t.includes('object')) || (t === undefined && isObject(node.properties));
}

function convert(node: Obj): void {
  // `default` is not among the keywords OpenAI documents for strict mode (some endpoints reject it:
  // "'default' is not permitted"), and every property is required there, so it is never applied.
  delete node.default;
  if (isObjectSchema(node) && isObject(node.properties)) {
    const props = node.properties;
    const required = new Set(
      Array.isArray(node.required) ? node.required.filter((r): r is string => typeof r === 'string') : [],
    );
    for (const [name, sub] of Object.entries(props))
      if (isObject(sub) && !required.has(name)) props[name] = nullable(sub);
    node.required = Object.keys(props);
    if (!('additionalProperties' in node)) node.additionalProperties = false;
  }
  forEachSubschema(node, (child) => convert(child));
}

function allowsNull(s: Obj): boolean {
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null'))) return true;
  if (Array.isArray(s.enum) && s.enum.includes(null)) return true;
  return Array.isArray(s.anyOf) && s.anyOf.some((m) => isObject(m) && allowsNull(m));
}

/** Scalars get `type: [T, 'null']` (and null in their enum); anything else `anyOf: [schema, {type: 'null'}]`. */
export function nullable(s: Obj): Obj {
  if (allowsNull(s) || Object.keys(s).length === 0) return s;
  if (typeof s.type === 'string' && SCALARS.has(s.type)) {
    return { ...s, type: [s.type, 'null'], ...(Array.isArray(s.enum) ? { enum: [...s.enum, null] } : {}) };
  }
  if (Array.isArray(s.type) && s.type.every((t) => typeof t === 'string' && SCALARS.has(t))) {
    return { ...s, type: [...s.type, 'null'], ...(Array.isArray(s.enum) ? { enum: [...s.enum, null] } : {}) };
  }
  if (Array.isArray(s.anyOf)) return { ...s, anyOf: [...s.anyOf, { type: 'null' }] };
  const outer: Obj = {};
  const inner: Obj = {};
  for (const [k, v] of Object.entries(s)) (ANNOTATIONS.has(k) ? outer : inner)[k] = v;
  return { anyOf: [inner, { type: 'null' }], ...outer };
}
